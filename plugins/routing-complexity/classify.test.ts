import { describe, expect, it } from "vitest";
import { classifyMessage, routeModel, type Tier } from "./classify.js";

const longAnalysis =
  "We are choosing between PostgreSQL and a document store for an event-sourced billing system. " +
  "Explain the trade-offs in consistency, operational cost and schema evolution, compare how each " +
  "handles replaying ten million events, and design a migration plan we could run without downtime. " +
  "Evaluate the risks step by step and say why you would pick one. ".repeat(3);

const table: [string, Tier][] = [
  ["hello", "cheap"],
  ["Hi there! How are you?", "cheap"],
  ["What is the capital of France?", "cheap"],
  ["thanks, that worked", "cheap"],
  ["Translate 'good morning' into Spanish.", "cheap"],
  ["Why is the sky blue?", "cheap"],
  ["Fix this:\n```js\nconst x = [1,2,3].map(n => n * 2)\nconsole.log(x[5].toFixed())\n```", "mid"],
  ["Explain the difference between TCP and UDP and compare their use in games.", "mid"],
  ["Can you refactor and optimize this function?\nfunction f(a) { return a.map(x => x * 2); }", "mid"],
  ["Here is the chart ![q3](https://example.com/q3.png) what does it show?", "mid"],
  ["Is it on? Did it work? Should I retry? What now?", "cheap"],
  ["Compare Rust and Go for a command-line tool and explain which you would pick.", "mid"],
  ["Design a small REST API for a todo list.", "cheap"],
  [longAnalysis, "expensive"],
  [
    "Analyze and compare the architectural trade-offs of event sourcing versus CRUD for a payments ledger, evaluate failure modes, and design a migration strategy with a step-by-step plan and risk assessment.",
    "expensive",
  ],
  [
    "Design a sharding strategy for our Postgres cluster, compare range and hash partitioning, and plan the migration step by step.",
    "expensive",
  ],
  [
    `Review this module and find the root cause of the leak:\n\`\`\`ts\n${"let a = 1;\n".repeat(200)}\`\`\``,
    "expensive",
  ],
];

describe("classifyMessage", () => {
  it.each(table)("%#: puts the message in the expected tier", (text, tier) => {
    expect(classifyMessage(text).tier).toBe(tier);
  });

  it("is deterministic and says why", () => {
    const a = classifyMessage(longAnalysis);
    expect(classifyMessage(longAnalysis)).toEqual(a);
    expect(a.reasons.join(" | ")).toMatch(/length/);
    expect(a.reasons.join(" | ")).toMatch(/reasoning words: .*trade-offs/);
  });
});

describe("routeModel", () => {
  const fallback = { provider: "openai", model: "default" };
  const cheap = { provider: "ollama", model: "small" };
  const expensive = { provider: "anthropic", model: "large" };

  it("routes by tier to the tier's provider and model", () => {
    const routing = { enabled: true, cheap, expensive };
    expect(routeModel("hello", routing, fallback)).toMatchObject({ model: cheap, tier: "cheap" });
    expect(routeModel(longAnalysis, routing, fallback)).toMatchObject({
      model: expensive,
      tier: "expensive",
    });
  });

  it("falls back to default_model for an unconfigured tier", () => {
    const routing = { enabled: true, cheap };
    expect(routeModel("Explain and compare TCP and UDP.", routing, fallback)).toMatchObject({
      model: fallback,
      tier: "mid",
    });
  });

  it("uses default_model when routing is off", () => {
    expect(routeModel("hello", { enabled: false, cheap }, fallback)).toEqual({ model: fallback });
  });
});
