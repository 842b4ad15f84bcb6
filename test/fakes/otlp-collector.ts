// A stand-in for an OpenTelemetry collector's OTLP/HTTP traces endpoint (POST /v1/traces), taking
// the JSON encoding (the exporter Spar uses sends it) and keeping every span it received, flattened
// with its resource's attributes, for assertions on names, kinds, parentage and attributes.
import { type FakeHttp, sendJson, startFakeHttp } from "./http-fake.js";

/** An OTLP/JSON attribute value: one of its typed fields. */
type AnyValue = {
  stringValue?: string;
  intValue?: string | number;
  doubleValue?: number;
  boolValue?: boolean;
  arrayValue?: { values?: AnyValue[] };
};

export interface ReceivedSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  /** OTLP's SpanKind: 1 internal, 2 server, 3 client, 4 producer, 5 consumer. */
  kind: number;
  attributes: Record<string, unknown>;
  resource: Record<string, unknown>;
  status?: { code?: number; message?: string };
}

export interface FakeOtlpCollector extends FakeHttp {
  readonly url: string;
  readonly spans: ReceivedSpan[];
  /** The content types of the requests received. */
  readonly contentTypes: string[];
  /** The headers of the requests received. */
  readonly headers: Record<string, string | string[] | undefined>[];
  /** Resolves once spans satisfying `done` have arrived (or rejects after `ms`). */
  waitFor(done: (spans: ReceivedSpan[]) => boolean, ms?: number): Promise<ReceivedSpan[]>;
}

function decoded(value: AnyValue | undefined): unknown {
  if (!value) return undefined;
  if (value.stringValue !== undefined) return value.stringValue;
  if (value.intValue !== undefined) return Number(value.intValue);
  if (value.doubleValue !== undefined) return value.doubleValue;
  if (value.boolValue !== undefined) return value.boolValue;
  if (value.arrayValue) return (value.arrayValue.values ?? []).map(decoded);
  return undefined;
}

function attributesOf(list: { key: string; value: AnyValue }[] | undefined): Record<string, unknown> {
  return Object.fromEntries((list ?? []).map((a) => [a.key, decoded(a.value)]));
}

interface ExportRequest {
  resourceSpans?: {
    resource?: { attributes?: { key: string; value: AnyValue }[] };
    scopeSpans?: {
      spans?: (Omit<ReceivedSpan, "attributes" | "resource"> & {
        attributes?: { key: string; value: AnyValue }[];
      })[];
    }[];
  }[];
}

export async function startFakeOtlpCollector(): Promise<FakeOtlpCollector> {
  const spans: ReceivedSpan[] = [];
  const contentTypes: string[] = [];
  const headers: Record<string, string | string[] | undefined>[] = [];
  const http = await startFakeHttp(async (req, res, body) => {
    if (req.method !== "POST" || req.url !== "/v1/traces") return sendJson(res, 404, { error: "not found" });
    contentTypes.push(String(req.headers["content-type"]));
    headers.push({ ...req.headers });
    const request = JSON.parse(body) as ExportRequest;
    for (const group of request.resourceSpans ?? []) {
      const resource = attributesOf(group.resource?.attributes);
      for (const scope of group.scopeSpans ?? []) {
        for (const span of scope.spans ?? []) {
          spans.push({ ...span, attributes: attributesOf(span.attributes), resource });
        }
      }
    }
    sendJson(res, 200, {});
  });
  return {
    ...http,
    close: () => http.close(),
    port: http.port,
    url: `http://127.0.0.1:${http.port}/v1/traces`,
    spans,
    contentTypes,
    headers,
    async waitFor(done, ms = 15_000) {
      const deadline = Date.now() + ms;
      while (!done(spans)) {
        if (Date.now() > deadline)
          throw new Error(`spans not received in ${ms} ms: ${JSON.stringify(spans.map((s) => s.name))}`);
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      return spans;
    },
  };
}
