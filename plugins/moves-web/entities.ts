/**
 * HTML character references: numeric ones as the HTML standard decodes them (windows-1252 for
 * 0x80–0x9F, U+FFFD for 0, surrogates and out-of-range values), and the named ones pages use in
 * practice (Latin-1, typography, arrows, maths, Greek). An unknown name stays as written.
 */

const LATIN1 =
  "nbsp iexcl cent pound curren yen brvbar sect uml copy ordf laquo not shy reg macr deg plusmn sup2 sup3 " +
  "acute micro para middot cedil sup1 ordm raquo frac14 frac12 frac34 iquest Agrave Aacute Acirc Atilde " +
  "Auml Aring AElig Ccedil Egrave Eacute Ecirc Euml Igrave Iacute Icirc Iuml ETH Ntilde Ograve Oacute " +
  "Ocirc Otilde Ouml times Oslash Ugrave Uacute Ucirc Uuml Yacute THORN szlig agrave aacute acirc atilde " +
  "auml aring aelig ccedil egrave eacute ecirc euml igrave iacute icirc iuml eth ntilde ograve oacute " +
  "ocirc otilde ouml divide oslash ugrave uacute ucirc uuml yacute thorn yuml";

const GREEK_UPPER =
  "Alpha Beta Gamma Delta Epsilon Zeta Eta Theta Iota Kappa Lambda Mu Nu Xi Omicron Pi Rho _ Sigma Tau " +
  "Upsilon Phi Chi Psi Omega";

const OTHERS: Record<string, number> = {
  Tab: 9,
  NewLine: 10,
  excl: 33,
  quot: 34,
  QUOT: 34,
  num: 35,
  dollar: 36,
  percnt: 37,
  amp: 38,
  AMP: 38,
  apos: 39,
  lpar: 40,
  rpar: 41,
  ast: 42,
  plus: 43,
  comma: 44,
  period: 46,
  sol: 47,
  colon: 58,
  semi: 59,
  lt: 60,
  LT: 60,
  equals: 61,
  gt: 62,
  GT: 62,
  quest: 63,
  commat: 64,
  lsqb: 91,
  lbrack: 91,
  bsol: 92,
  rsqb: 93,
  rbrack: 93,
  Hat: 94,
  lowbar: 95,
  grave: 96,
  lcub: 123,
  lbrace: 123,
  verbar: 124,
  vert: 124,
  rcub: 125,
  rbrace: 125,
  COPY: 169,
  REG: 174,
  OElig: 338,
  oelig: 339,
  Scaron: 352,
  scaron: 353,
  Yuml: 376,
  fnof: 402,
  circ: 710,
  tilde: 732,
  thetasym: 977,
  upsih: 978,
  piv: 982,
  ensp: 8194,
  emsp: 8195,
  thinsp: 8201,
  ZeroWidthSpace: 8203,
  zwnj: 8204,
  zwj: 8205,
  lrm: 8206,
  rlm: 8207,
  hyphen: 8208,
  dash: 8208,
  ndash: 8211,
  mdash: 8212,
  horbar: 8213,
  lsquo: 8216,
  rsquo: 8217,
  sbquo: 8218,
  ldquo: 8220,
  rdquo: 8221,
  bdquo: 8222,
  dagger: 8224,
  Dagger: 8225,
  bull: 8226,
  bullet: 8226,
  hellip: 8230,
  mldr: 8230,
  permil: 8240,
  prime: 8242,
  Prime: 8243,
  lsaquo: 8249,
  rsaquo: 8250,
  oline: 8254,
  frasl: 8260,
  euro: 8364,
  trade: 8482,
  TRADE: 8482,
  larr: 8592,
  uarr: 8593,
  rarr: 8594,
  darr: 8595,
  harr: 8596,
  lArr: 8656,
  uArr: 8657,
  rArr: 8658,
  dArr: 8659,
  hArr: 8660,
  forall: 8704,
  part: 8706,
  exist: 8707,
  empty: 8709,
  nabla: 8711,
  isin: 8712,
  notin: 8713,
  ni: 8715,
  prod: 8719,
  sum: 8721,
  minus: 8722,
  lowast: 8727,
  radic: 8730,
  prop: 8733,
  infin: 8734,
  ang: 8736,
  and: 8743,
  or: 8744,
  cap: 8745,
  cup: 8746,
  int: 8747,
  there4: 8756,
  sim: 8764,
  cong: 8773,
  asymp: 8776,
  ne: 8800,
  equiv: 8801,
  le: 8804,
  ge: 8805,
  sub: 8834,
  sup: 8835,
  nsub: 8836,
  sube: 8838,
  supe: 8839,
  oplus: 8853,
  otimes: 8855,
  perp: 8869,
  sdot: 8901,
  lceil: 8968,
  rceil: 8969,
  lfloor: 8970,
  rfloor: 8971,
  lang: 10216,
  rang: 10217,
  loz: 9674,
  starf: 9733,
  star: 9734,
  spades: 9824,
  clubs: 9827,
  hearts: 9829,
  diams: 9830,
  check: 10003,
  cross: 10007,
};

function buildTable(): Map<string, string> {
  const table = new Map<string, string>();
  LATIN1.split(" ").forEach((name, i) => {
    table.set(name, String.fromCodePoint(160 + i));
  });
  GREEK_UPPER.split(" ").forEach((name, i) => {
    if (name === "_") return;
    table.set(name, String.fromCodePoint(913 + i));
    // The lowercase letters sit 32 above, with final sigma in the gap the capitals leave.
    table.set(name.toLowerCase(), String.fromCodePoint(945 + i));
  });
  table.set("sigmaf", String.fromCodePoint(962));
  for (const [name, code] of Object.entries(OTHERS)) table.set(name, String.fromCodePoint(code));
  return table;
}

export const NAMED_ENTITIES: ReadonlyMap<string, string> = buildTable();

// Names the standard also decodes without the semicolon, as old pages write them.
const LEGACY = new Set(["amp", "lt", "gt", "quot", "nbsp", "copy", "reg", "AMP", "LT", "GT", "QUOT"]);

// What numeric references 0x80–0x9F mean (the windows-1252 reading the standard prescribes).
const WINDOWS_1252: Record<number, number> = {
  128: 0x20ac,
  130: 0x201a,
  131: 0x0192,
  132: 0x201e,
  133: 0x2026,
  134: 0x2020,
  135: 0x2021,
  136: 0x02c6,
  137: 0x2030,
  138: 0x0160,
  139: 0x2039,
  140: 0x0152,
  142: 0x017d,
  145: 0x2018,
  146: 0x2019,
  147: 0x201c,
  148: 0x201d,
  149: 0x2022,
  150: 0x2013,
  151: 0x2014,
  152: 0x02dc,
  153: 0x2122,
  154: 0x0161,
  155: 0x203a,
  156: 0x0153,
  158: 0x017e,
  159: 0x0178,
};

/** A byte 0x80–0x9F read as windows-1252 (the five it leaves undefined stay as they are). */
export function windows1252(code: number): string {
  return String.fromCodePoint(WINDOWS_1252[code] ?? code);
}

function fromNumber(code: number): string {
  if (code === 0 || code > 0x10ffff || (code >= 0xd800 && code <= 0xdfff)) return "\ufffd";
  return String.fromCodePoint(WINDOWS_1252[code] ?? code);
}

const REFERENCE = /&(?:#([0-9]{1,8})|#[xX]([0-9a-fA-F]{1,8})|([A-Za-z][A-Za-z0-9]{1,31}))(;?)/g;

/** Decodes the character references in a piece of HTML text or an attribute value. */
export function decodeEntities(text: string): string {
  if (!text.includes("&")) return text;
  return text.replace(REFERENCE, (whole, dec?: string, hex?: string, name?: string, semi?: string) => {
    if (dec !== undefined) return fromNumber(Number.parseInt(dec, 10));
    if (hex !== undefined) return fromNumber(Number.parseInt(hex, 16));
    const named = NAMED_ENTITIES.get(name as string);
    if (named !== undefined && (semi === ";" || LEGACY.has(name as string))) return named;
    return whole;
  });
}
