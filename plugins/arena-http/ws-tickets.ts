/**
 * WebSocket tickets: a browser cannot add signature headers to a WebSocket upgrade, so a client that
 * signs its requests first asks for a ticket (`POST /api/v1/ws/ticket`, authenticated like any
 * route) and then opens `/api/v1/ws?ticket=<ticket>`. A ticket is 256 random bits, good for one
 * upgrade within 60 s, and carries the key that asked for it: the socket is that key's, for rate
 * limits and logs, as a signed request would be.
 */
import { randomBytes } from "node:crypto";

/** How long a ticket may wait for its upgrade. */
export const TICKET_TTL_S = 60;
/** Tickets outstanding at once; past it the oldest go (a client asks again). */
const MAX_OUTSTANDING = 1_000;

export interface TicketBook {
  /** A fresh ticket for the key (undefined: an unsigned loopback client). */
  issue(keyId: string | undefined): { ticket: string; expires_in_s: number };
  /** The ticket's key, once: undefined when it is unknown, used or expired. */
  redeem(ticket: string): { keyId: string | undefined } | undefined;
}

export function createTicketBook(now: () => number = Date.now): TicketBook {
  const tickets = new Map<string, { keyId: string | undefined; expires: number }>();
  return {
    issue(keyId) {
      const at = now();
      for (const [t, entry] of tickets) if (entry.expires <= at) tickets.delete(t);
      while (tickets.size >= MAX_OUTSTANDING) tickets.delete(tickets.keys().next().value as string);
      const ticket = randomBytes(32).toString("base64url");
      tickets.set(ticket, { keyId, expires: at + TICKET_TTL_S * 1000 });
      return { ticket, expires_in_s: TICKET_TTL_S };
    },
    redeem(ticket) {
      const entry = tickets.get(ticket);
      if (!entry) return undefined;
      tickets.delete(ticket);
      return entry.expires > now() ? { keyId: entry.keyId } : undefined;
    },
  };
}
