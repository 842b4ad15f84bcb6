import { describe, expect, it } from "vitest";
import { createTicketBook, TICKET_TTL_S } from "./ws-tickets.js";

describe("WebSocket tickets", () => {
  it("redeems a ticket once, for the key that asked for it", () => {
    const book = createTicketBook();
    const { ticket, expires_in_s } = book.issue("laptop");
    expect(ticket).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(expires_in_s).toBe(TICKET_TTL_S);
    expect(book.redeem(ticket)).toEqual({ keyId: "laptop" });
    expect(book.redeem(ticket)).toBeUndefined();
    expect(book.redeem("not-a-ticket")).toBeUndefined();
  });

  it("refuses a ticket past its time", () => {
    let clock = 1_000_000;
    const book = createTicketBook(() => clock);
    const { ticket } = book.issue("laptop");
    clock += TICKET_TTL_S * 1000;
    expect(book.redeem(ticket)).toBeUndefined();
  });

  it("keeps at most a thousand outstanding, dropping the oldest", () => {
    const book = createTicketBook();
    const first = book.issue("a").ticket;
    for (let i = 0; i < 1_000; i++) book.issue("a");
    expect(book.redeem(first)).toBeUndefined();
  });
});
