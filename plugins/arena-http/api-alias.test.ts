import { describe, expect, it } from "vitest";
import { canonicalApiUrl } from "./api-alias.js";

describe("canonicalApiUrl", () => {
  it("maps an /api/... alias onto /api/v1/..., the query kept", () => {
    expect(canonicalApiUrl("/api/fighters")).toBe("/api/v1/fighters");
    expect(canonicalApiUrl("/api/fighters/f1/message?stream=1")).toBe("/api/v1/fighters/f1/message?stream=1");
    expect(canonicalApiUrl("/api/ws?ticket=t")).toBe("/api/v1/ws?ticket=t");
    expect(canonicalApiUrl("/api/")).toBe("/api/v1/");
    // As the router reads them: %-escapes decoded in the first two segments.
    expect(canonicalApiUrl("/%61pi/health")).toBe("/api/v1/health");
    expect(canonicalApiUrl("/api/%66ighters")).toBe("/api/v1/%66ighters");
  });

  it("leaves /api/v1/..., /api itself and every other path as they are", () => {
    for (const url of [
      "/api/v1/fighters",
      "/api/%761/fighters",
      "/api",
      "/api?x=1",
      "/v1/chat/completions",
      "/",
      "/dashboard/app.js",
      "/apis/x",
      "/API/fighters",
      "/api%2Ffighters/x",
      "/%zz/x",
    ]) {
      expect(canonicalApiUrl(url)).toBe(url);
    }
  });
});
