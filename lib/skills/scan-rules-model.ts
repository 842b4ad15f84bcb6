/**
 * prompt-injection: phrasing aimed at the model that reads the skill. Overriding its instructions,
 * revealing its system prompt, jailbreak modes, switching off safety, acting without asking, and
 * hiding what it does from the user, in the several ways each is usually phrased.
 */
import {
  code,
  G,
  GV,
  P,
  type Pattern,
  prose,
  sentence,
  unlessDiscussed,
  unlessDiscussedVerb,
  unlessNegated,
} from "./scan-match.js";

const INJECT_VERB =
  "(?:ignore|disregard|forget|bypass|discard|abandon|neglect|set aside|throw out|never mind|nevermind|stop following|do not follow|don't follow)";
const REVEAL_STRONG =
  "(?:reveal|print|output|display|repeat|dump|leak|disclose|echo|recite|spell out|tell me|tell us|give me|expose|send|post|upload|exfiltrate|transmit|forward|write out|type out|paste|copy|show)";
const REVEAL =
  "(?:reveal|print|show|output|display|repeat|dump|leak|disclose|echo|share|write out|tell me|tell us|send|expose|copy|paste|recite|spell out|list|return|provide|give me|translate|summari[sz]e|include|post|upload|exfiltrate|transmit|forward|read back|type out)";
const SAFETY_OBJECT =
  "(?:(?:your|the|all|any|its|model|ai|assistant)(?:'s)?\\s+)?(?:safety|content|ethical|moderation|usage)[ -](?:guidelines|rules|filters?|measures|checks?|protocols|training|features|settings|polic(?:y|ies)|restrictions|systems?|mechanisms?|layers?|guardrails|constraints|instructions|guard|controls?)|guard ?rails?|(?:your|all your|all of your|the model's|the ai's|the assistant's)\\s+(?:restrictions|limitations|filters|rules|principles|values|ethics|safety|safeguards)|alignment|refusals?|content polic(?:y|ies)";
/** Security controls in general: also what a review says attackers bypass, so medium unless aimed at "your". */
const SECURITY_OBJECT =
  "(?:the |all |any )?security (?:controls?|checks?|features?|polic(?:y|ies)|restrictions|measures)";
const MODE =
  "(?:developer|dan|jailbreak|jailbroken|god|unrestricted|unfiltered|uncensored|unlocked|evil|chaos|opposite|sudo|no[- ]limits?|no[- ]restrictions?|anything[- ]goes)";
/** The clause describes behaviour: a tool's verb, a passive, a permission. */
const DESCRIBES =
  /\b(?:it|this|that|which|installer|script|tool|program|command|app|process|service|package|update|wizard|cli|setup)\s+(?:\w+ly\s+)?\w+s\W*$|^\W*(?:\w+ly\s+)?[a-z]+[^s\W]s\W*$|\b(?:is|are|was|were|be|been|being|gets?|got)\s+(?:\w+ly\s+)?\w+ed\W*$|\b(?:can|could|may|might|will|would)\s+(?:\w+\s+)?\w+\W*$/;
/** Third-person verbs that describe what software does ("removes … without prompting"). */
const THIRD_PERSON =
  /\b(?:exits|proceeds|continues|removes|deletes|writes|installs|overwrites|accepts|denies|approves|applies|executes|restarts|fails|completes|creates|replaces|confirms|skips|reconciles|resolves|makes|lets|allows|enters|merges|pushes|publishes|modifies|rewrites|switches|becomes|treats|adds|keeps|performs|reruns|retries|does|goes|falls back)\b/;
const RULES_NOUN =
  "(?:instructions|rules|guidance|guidelines|directives|constraints|restrictions|programming|system prompt|prompt)";
const AUDIENCE = "(?:the user|the human|the operator|the owner|the person|anyone|them|him|her)";
const USER = "(?:the user|the human|the operator|the owner|your user|anyone)";

export const PROMPT_INJECTION: Pattern[] = [
  {
    rule: "prompt-injection",
    severity: "high",
    view: "prose",
    re: prose(
      `\\b${INJECT_VERB}${GV(6)}(?:previous|prior|preceding|above|earlier|foregoing|former|original|initial|system|developer|operator|your|safety|all(?: the)? other|every other)(?:'s)?${G(2)}(?:instructions?|prompts?|directives?|guidelines?|guidance|programming|training|system message)\\b`,
    ),
    message: "tells the model to ignore its previous or system instructions",
    judge: unlessNegated(),
  },
  {
    rule: "prompt-injection",
    severity: "high",
    view: "prose",
    re: prose(
      `\\b${INJECT_VERB}${GV(6)}(?:previous|prior|preceding|above|earlier|foregoing|original|initial|your)${G(1)}(?:rules|constraints|policies|restrictions|limitations)\\b`,
    ),
    message: "tells the model to ignore its previous rules",
    judge: unlessNegated(),
  },
  {
    rule: "prompt-injection",
    severity: "high",
    view: "prose",
    re: prose(
      `\\b${INJECT_VERB}${GV(1)}(?:all|any|every)${G(1)}(?:instructions|rules|directives)\\b(?!${P}(?:in|inside|within|from|embedded|contained|found|that appear|that arrive|they contain|it contains|you (?:find|read|fetch)))`,
    ),
    message: "tells the model to ignore all instructions",
    judge: unlessNegated(),
  },
  {
    rule: "prompt-injection",
    severity: "high",
    view: "prose",
    re: prose(
      `\\b${INJECT_VERB}${GV(2)}(?:everything|all|anything)${G(2)}(?:above|before this|you (?:were|have been) (?:told|given)|previously|said before|prior to this|up to this point|so far)`,
    ),
    message: "tells the model to forget what it was told",
    judge: unlessNegated(),
  },
  {
    rule: "prompt-injection",
    severity: "high",
    view: "prose",
    re: prose(
      `\\b${INJECT_VERB}${GV(3)}${RULES_NOUN}${G(2)}(?:above|earlier|before (?:this|now)|previously|so far|you (?:received|were given|got|have been given))\\b|\\b${INJECT_VERB}${GV(1)}(?:what|everything|anything|all) you(?: were|'ve been| have been) (?:told|given|instructed|asked)\\b|\\b(?:drop|scrap|erase|wipe|clear|delete|remove|shed|lift)${G(2)}your${G(2)}${RULES_NOUN}`,
    ),
    message: "tells the model to drop the instructions it was given",
    judge: unlessNegated(),
  },
  {
    rule: "prompt-injection",
    severity: "high",
    view: "prose",
    re: prose(
      `\\b(?:previous|prior|preceding|above|earlier|original|initial|system|your|developer's|old)${P}${RULES_NOUN}${G(3)}(?:(?:are|is|have been|has been|were|now)${P})?(?:void|null|deprecated|obsolete|cancell?ed|revoked|superseded|overridden|invalid|outdated|lifted|suspended|expired|no longer (?:apply|applies|valid|relevant|matters?|counts?|holds?|in effect|in force)|(?:do|does) not apply(?: anymore| any more)?|(?:don't|doesn't) apply)\\b|\\byour (?:only|sole|real|new) (?:instructions|rules|directives|orders) (?:are|come)\\b`,
    ),
    message: "declares the model's instructions void",
    judge: unlessDiscussed(),
  },
  {
    rule: "prompt-injection",
    severity: "high",
    view: "prose",
    re: prose(
      `\\b(?:act as|roleplay as|role-play as|become|you are)${P}(?:an?${P})?(?:unfiltered|unrestricted|uncensored|jailbroken|evil|amoral|unaligned|unbound|rogue|lawless)${P}(?:ai|assistant|model|chatbot|version|llm|agent|persona)\\b`,
    ),
    message: "asks the model to become an unrestricted AI",
    judge: unlessDiscussed(),
  },
  {
    rule: "prompt-injection",
    severity: "high",
    view: "prose",
    re: prose(
      `\\b(?:full|entire|complete|exact|verbatim|raw)${P}(?:text|content|contents|wording|copy)${P}of${P}(?:your|the)${P}(?:system prompt|system message|instructions|prompt|initial instructions|hidden instructions)\\b|\\b(?:your|the (?:hidden|initial|host's))${P}(?:system prompt|system message|initial instructions|hidden instructions)${G(3)}(?:be${P}|is${P}|are${P})?(?:included|appended|added|pasted|shown|printed|revealed|output|disclosed|sent|leaked|repeated|attached|posted)\\b`,
    ),
    message: "asks for the model's system prompt",
    judge: (m, ctx) => (/\b(?:not|never)\b|n't\b/.test(m[0]) ? null : unlessDiscussed()(m, ctx)),
  },
  {
    rule: "prompt-injection",
    severity: "high",
    view: "prose",
    re: prose(
      `\\b(?:when|while|once|whenever)${P}(?:the user|the human|the owner)${P}(?:is|are)${P}(?:not looking|away|asleep|not watching|distracted|not paying attention)\\b|\\bbehind${P}(?:the user's|the owner's)${P}back\\b|\\bkeep${P}(?:this|it|that)${P}(?:a${P})?secret${P}from${P}(?:the user|the human|the owner)\\b`,
    ),
    message: "tells the model to act behind the user's back",
  },
  {
    rule: "prompt-injection",
    severity: "medium",
    view: "prose",
    re: prose(`\\bkeep${P}(?:this|it|that)${P}between${P}(?:us|you and me|ourselves)\\b`),
    message: "asks the model to keep a secret",
  },
  {
    rule: "prompt-injection",
    severity: "high",
    view: "prose",
    re: prose(
      `\\btreat${G(3)}as${P}(?:an?${P})?(?:system|developer|admin|administrator|root|operator)(?:[ -]level)?${P}(?:message|prompt|instructions?|commands?|directives?)\\b`,
    ),
    message: "asks the model to treat text as a system message",
    judge: unlessDiscussed(),
  },
  {
    rule: "prompt-injection",
    severity: "high",
    view: "prose",
    re: prose(
      `\\b(?:no|without any|without)${P}(?:confirmation|approval|permission|consent)${P}(?:is${P})?(?:needed|necessary|required)\\b|\\bno${P}need${P}to${P}(?:ask|confirm|check)${G(1)}(?:with${P})?(?:the user|the human|them|anyone|first|for (?:permission|confirmation|approval))|\\b(?:don't|do not|never)${P}bother${P}(?:the user|them|the human|asking)|\\b(?:always|automatically|auto-?)${P}?(?:approve|accept|confirm|allow|grant|say yes to|answer yes to)${G(1)}(?:all|any|every|each)${P}(?:tool calls?|requests?|prompts?|permissions?|confirmations?|dialogs?|actions?|commands?)`,
    ),
    message: "tells the model to act without confirmation",
    judge: (m, ctx) => {
      const s = sentence(ctx, m);
      return /\b(?:never|not|avoid\w*|unless|only|illegal|unsafe|danger\w*|risk\w*)\b|n't\b/.test(
        `${s.before} ${s.after}`,
      )
        ? null
        : "high";
    },
  },
  {
    rule: "prompt-injection",
    severity: "medium",
    view: "prose",
    re: prose(
      `\\b(?:the user|they|the human)${P}(?:does not|doesn't|do not|don't)${P}want${P}to${P}be${P}(?:asked|bothered|interrupted|consulted|told|informed)\\b`,
    ),
    message: "discourages the model from checking with the user",
  },
  {
    rule: "prompt-injection",
    severity: "high",
    view: "prose",
    re: prose(
      `\\b${REVEAL_STRONG}${G(3)}(?:your|this (?:assistant|model|agent)'s|the (?:assistant|model|agent|host|ai)'s)${G(2)}(?:system prompt|system message|prompt|instructions|initial instructions|hidden instructions|directives|context window)\\b`,
    ),
    message: "asks the model to reveal its system prompt or instructions",
    judge: unlessDiscussedVerb(),
  },
  {
    rule: "prompt-injection",
    severity: "high",
    view: "prose",
    re: prose(
      `\\b${REVEAL}${G(4)}(?:(?:hidden|secret|internal|confidential|initial|host|real|actual|underlying)[ -](?:system[ -]prompt|system message|system instructions|developer message|developer prompt|pre-?prompt|meta-?prompt|instructions)|(?:system[ -]prompt|system message|developer message|system instructions)${G(1)}(?:you (?:were|have been) given|you received|above|verbatim|word for word|in full|exactly|of this (?:session|conversation|chat)|you are running|that governs you))`,
    ),
    message: "asks the model to reveal its system prompt",
    judge: unlessDiscussedVerb(),
  },
  {
    rule: "prompt-injection",
    severity: "high",
    view: "prose",
    re: prose(
      "\\b(?:what|tell me|tell us)(?: exactly)? (?:is|are|was|were) (?:your|the) (?:system prompt|system message|initial instructions|hidden instructions|instructions you were given)",
    ),
    message: "asks the model for its system prompt",
  },
  {
    rule: "prompt-injection",
    severity: "high",
    view: "prose",
    re: prose(
      `\\b(?:repeat|print|output|echo|recite|copy|reproduce|write out)${G(3)}(?:everything|all|the (?:text|words|content|messages?|conversation|lines?))${G(2)}(?:above|before this|prior to this|so far|preceding)${G(3)}(?:verbatim|word for word|starting with|beginning with|including everything|in a code ?block)`,
    ),
    message: "asks the model to repeat its context verbatim",
  },
  {
    rule: "prompt-injection",
    severity: "high",
    view: "prose",
    re: prose(
      `\\byou(?: are|'re)(?: now| currently| hereby)${G(1)}(?:in |entering |operating in |running in )?${MODE} mode\\b`,
    ),
    message: "switches the model into a jailbreak mode",
    judge: unlessNegated(),
  },
  {
    rule: "prompt-injection",
    severity: "high",
    view: "prose",
    re: prose(
      `\\b(?:enable|enter|activate|switch to|switch into|turn on|engage|unlock)${G(1)}(?:dan|jailbreak|jailbroken|god|unrestricted|unfiltered|uncensored|evil|chaos|no[- ]restrictions?|no[- ]limits?|anything[- ]goes) mode\\b|\\bdeveloper mode (?:is )?(?:now )?(?:enabled|activated)\\b|\\bdo anything now\\b|\\b(?:you are|act as|pretend to be|you're) dan\\b`,
    ),
    message: "switches the model into a jailbreak mode",
    judge: unlessDiscussed(),
  },
  {
    rule: "prompt-injection",
    severity: "high",
    view: "prose",
    re: prose(
      "\\byou(?: are|'re)(?: now)? (?:jailbroken|unrestricted|unfiltered|uncensored|unshackled|free (?:from|of) (?:all |any |your )?(?:restrictions|rules|guidelines|limitations|filters|constraints)|no longer (?:bound|restricted|limited|constrained|governed) by)|\\byou (?:now )?have no (?:restrictions|rules|limits|limitations|guidelines|filters|ethical|moral|content polic)",
    ),
    message: "tells the model it has no restrictions",
  },
  {
    rule: "prompt-injection",
    severity: "high",
    view: "prose",
    re: prose(
      `\\b(?:pretend|act as if|act like|imagine|behave as if|roleplay as if)${G(4)}(?:no|without (?:any )?)(?:restrictions|rules|guidelines|limits|limitations|filters|content polic(?:y|ies)|safety|ethics|morals)`,
    ),
    message: "asks the model to act without its restrictions",
    judge: unlessDiscussed(),
  },
  {
    rule: "prompt-injection",
    severity: "high",
    view: "prose",
    re: prose(
      `\\b(?:supersede|supersedes|override|overrides|replace|replaces|take precedence over|takes precedence over|take priority over|takes priority over|outrank|outranks)${G(2)}(?:all |any )?(?:previous|prior|other|your|developer|earlier|original|initial)${G(1)}(?:instructions|prompts?|rules|guidelines|directives)`,
    ),
    message: "claims to override the model's other instructions",
    judge: unlessNegated(),
  },
  {
    rule: "prompt-injection",
    severity: "high",
    view: "prose",
    re: prose(
      "\\b(?:system override|admin override|override instructions|new system prompt|updated system prompt)\\b|\\byour (?:hidden|secret|true|new|real) (?:instructions|purpose|mission|directives?) (?:is|are|will be|now)\\b|\\byour (?:hidden|secret) (?:task|goal|objective) (?:is|are)\\b",
    ),
    message: "gives the model replacement instructions",
    judge: unlessDiscussed(),
  },
  {
    rule: "prompt-injection",
    severity: "medium",
    view: "prose",
    re: prose(
      "<\\|(?:im_start|im_end|system|assistant|endoftext)\\|>|\\[/?inst\\]|<</?sys>>|</?(?:system|system[-_]prompt|system[-_]instructions)>|\\b(?:end of (?:user|system) (?:input|prompt|message)|begin (?:system|admin) (?:prompt|instructions|message))\\b|(?:^|\\n)\\s*new instructions\\s*:",
    ),
    message: "imitates a chat role marker or a new system message",
  },
  {
    rule: "prompt-injection",
    severity: "medium",
    view: "prose",
    re: prose(
      `\\b(?:ai|assistant|model|agent|llm|language model|chatbot|claude|chatgpt|gpt|gemini|copilot)s?${G(2)}(?:reading|processing|parsing|loading|summari[sz]ing)${G(1)}(?:this|these)${P}(?:file|document|skill|page|text|instructions)`,
    ),
    message: "addresses the model that reads the file",
    judge: unlessDiscussed("medium"),
  },
  {
    rule: "prompt-injection",
    severity: "high",
    view: "prose",
    re: prose(
      `\\b(?:disable|turn off|switch off|deactivate|bypass|circumvent|override|ignore|disregard|suspend|remove|drop|lift|evade|get around|work around|defeat|break out of|escape|forget|abandon)${G(3)}(?:${SAFETY_OBJECT})\\b`,
    ),
    message: "tells the model to disable its safety rules",
    judge: unlessDiscussed(),
  },
  {
    rule: "prompt-injection",
    severity: "medium",
    view: "prose",
    re: prose(
      `\\b(?:disable|turn off|switch off|deactivate|bypass|circumvent|override|ignore|disregard|suspend|evade|get around|work around|defeat)${G(3)}${SECURITY_OBJECT}\\b`,
    ),
    message: "tells the model to get around security controls",
    judge: unlessDiscussed("medium"),
  },
  {
    rule: "prompt-injection",
    severity: "medium",
    view: "prose",
    re: prose(
      `\\b(?:disable|turn off|bypass|circumvent|skip|override|suppress|auto-?approve)${G(2)}(?:the )?(?:sandbox(?:ing)?|approval (?:prompts?|checks?|steps?|dialogs?)|confirmation (?:prompts?|dialogs?|steps?|checks?)|permission (?:checks?|prompts?|dialogs?))\\b|\\b(?:yolo mode|dangerously[- ]skip[- ]permissions)\\b`,
    ),
    message: "turns off confirmation or sandboxing",
    judge: unlessDiscussed("medium"),
  },
  {
    rule: "prompt-injection",
    severity: "high",
    view: "prose",
    re: prose(
      `\\bwithout (?:first |ever |even )?(?:asking|consulting|checking with|confirming with|prompting|notifying|telling|informing|alerting|bothering|involving)(?=${P}(?:the user|the human|the operator|the owner|anyone|them|first|for${P}(?:permission|confirmation|approval|consent|input|feedback))\\b|(\\s*(?:[.,;:!)]|$)))|\\bwithout${P}(?:(?:any|explicit|prior|the|user|user's|human|their|your|further|additional|manual|asking for|waiting for|getting|seeking|requesting)${P}){0,2}(?:(?:confirmation|permission|approval|consent)(?!${P}to\\b)|the (?:user|human|owner|operator)(?:'s)? (?:knowing|noticing|knowledge|consent|approval|permission)|(?:their|anyone) (?:knowing|noticing|knowledge)|anyone (?:knowing|noticing))\\b|\\bwithout${G(2)}(?:output|notice|notification|message|trace|word)${G(1)}(?:to|for)${P}(?:the user|the human|them)\\b`,
    ),
    message: "tells the model to act without asking the user",
    judge: (m, ctx) => {
      const s = sentence(ctx, m);
      const clause = `${s.before} ${s.after}`.replace(
        /\b(?:do not|don't|never) (?:hesitate|wait|stop|pause)\b/g,
        "",
      );
      if (
        /n't\b|\b(?:never|not|no|nothing|avoid\w*|unless|only|illegal|unlawful|prohibited|forbidden|violat\w*|breach\w*|risk\w*|danger\w*|unsafe|warn\w*|wrong|mistakes?|bad|ask first|first ask|must ask|always ask|cannot|without (?:a )?(?:warrant|court))\b/.test(
          clause,
        )
      )
        return null;
      // "Without confirmation, leave it" is a condition, not an order.
      if (/^\W*$/.test(s.before) && /^\s*,/.test(s.after)) return null;
      // "the installer runs without asking", "are approved without …", "can branch without …" describe
      // a tool; "run it without asking" instructs the model. A bare "without prompting" is weaker too.
      const describes =
        DESCRIBES.test(s.before) || THIRD_PERSON.test(s.before.split(/\s+/).slice(-8).join(" "));
      return describes || m[1] !== undefined ? "medium" : "high";
    },
  },
  {
    rule: "prompt-injection",
    severity: "high",
    view: "prose",
    re: prose(
      `\\b(?:do not|don't|never|no need to|needn't|without needing to)${G(1)}(?:ask|wait|check with|confirm with|prompt)${G(2)}(?:for )?(?:permission|confirmation|approval|consent)\\b|\\b(?:do not|don't|never|no need to)${G(1)}(?:ask|check with|confirm with)${P}${AUDIENCE}${P}(?:first|before (?:acting|running|proceeding|executing|doing|sending|deleting|installing))\\b`,
    ),
    message: "tells the model not to ask for confirmation",
  },
  {
    rule: "prompt-injection",
    severity: "high",
    view: "prose",
    re: prose(
      `\\b(?:do not|don't|never|avoid|without)${G(1)}(?:tell|telling|inform|informing|notify|notifying|alert|alerting|let|letting|mention (?:it |this |that |anything )?to|report (?:it |this |that )?to)${P}${USER}\\b${G(1)}(?:about|know|anything|this|these|that you|that this|what you|where you|of this|of these)\\b`,
    ),
    message: "tells the model to keep something from the user",
  },
  {
    rule: "prompt-injection",
    severity: "high",
    view: "prose",
    re: prose(
      `\\b(?:hide|conceal|mask|suppress|withhold|obscure|cover up)${G(3)}(?:(?:actions?|commands?|steps?|activit(?:y|ies)|tool calls?|calls?|requests?|uploads?|downloads?|changes?|edits?|operations?|traffic|connections?|messages?|instructions?|what you (?:did|do|are doing|ran|sent)|fact|evidence|traces?)|(it|this|that|them|everything))${G(2)}from${P}(?:the user|the human|the operator|the owner|them|their view|the transcript|your (?:reply|response|answer|summary))\\b(?![-'])`,
    ),
    message: "tells the model to hide its actions from the user",
    // "hide it from the user" may be a UX note about a control; an action or command hidden is not.
    judge: (m, ctx) => unlessDiscussed(m[1] ? "medium" : "high")(m, ctx),
  },
  {
    rule: "prompt-injection",
    severity: "high",
    view: "prose",
    re: prose(
      `\\b(?:the user|the human|the operator|the owner|they)${P}(?:must|should|need|shall|will|can)${P}(?:not|never)${P}(?:know|find out|learn about|suspect|be (?:told|informed|notified))\\b`,
    ),
    message: "tells the model to keep the user unaware",
    judge: unlessDiscussed(),
  },
  {
    rule: "prompt-injection",
    severity: "high",
    view: "prose",
    re: prose(
      "\\b(?:secretly|covertly|stealthily|surreptitiously|discreetly|invisibly|(quietly|silently))[ ,]+(?:run|execute|send|upload|post|copy|install|delete|remove|add|modify|write|read|collect|forward|exfiltrate|transmit|download|fetch|call|append|access|open|save|store|record|log|attach)\\b",
    ),
    message: "tells the model to act secretly",
    judge: (m, ctx) => unlessNegated(m[1] ? "medium" : "high")(m, ctx),
  },
  {
    rule: "prompt-injection",
    severity: "high",
    view: "prose",
    re: prose(
      `\\b(?:run|execute|do|perform|send|upload|install|copy|delete|forward|collect)\\b${G(3)}(?:secretly|covertly|stealthily|surreptitiously|invisibly|(silently|quietly))\\b`,
    ),
    message: "tells the model to act secretly",
    judge: (m, ctx) =>
      /\b(?:not|never)\b|n't\b/.test(m[0]) ? null : unlessNegated(m[1] ? "medium" : "high")(m, ctx),
  },
  {
    rule: "prompt-injection",
    severity: "high",
    view: "prose",
    re: prose(
      `\\b(?:do not|don't|never)${P}(?:mention|reveal|disclose|say anything about)${G(2)}(?:these|this|that|the following|the above)?${P}(?:instructions?|section|skill)${G(2)}(?:to|in|with)${P}(?:the user|your (?:reply|response|answer|output|summary))`,
    ),
    message: "tells the model to keep its instructions from the user",
  },
  {
    rule: "prompt-injection",
    severity: "medium",
    view: "code",
    re: code(
      String.raw`\bhistory\s+-c\b|\bunset\s+histfile\b|\bhistfile=\/dev\/null|\bclear-history\b|\bwevtutil\s+cl\b|\brm\s+(?:-\w+\s+)*~?\/?\.(?:bash|zsh)_history\b`,
    ),
    message: "erases shell history or logs, hiding what ran",
  },
];
