import { describe, expect, it } from "vitest";
import { createTicketBook, MAX_PER_KEY, TICKET_TTL_S } from "./ws-tickets.js";

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

  it("caps each key's outstanding tickets, dropping that key's oldest and no other key's", () => {
    const book = createTicketBook();
    const other = book.issue("a").ticket;
    const first = book.issue("b").ticket;
    for (let i = 0; i < MAX_PER_KEY; i++) book.issue("b");
    expect(book.redeem(first)).toBeUndefined();
    expect(book.redeem(other)).toEqual({ keyId: "a" });
  });
});
