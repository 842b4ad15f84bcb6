/**
 * WebSocket tickets: a browser cannot add signature headers to a WebSocket upgrade, so a client that
 * signs its requests first asks for a ticket (`POST /api/v1/ws/ticket`, authenticated like any
 * route) and then opens `/api/v1/ws?ticket=<ticket>`. A ticket is 256 random bits, good for one
 * upgrade within 60 s, and carries the key that asked for it: the socket is that key's, for rate
 * limits, scopes and logs, as a signed request would be.
 */
import { randomBytes } from "node:crypto";

/** How long a ticket may wait for its upgrade. */
export const TICKET_TTL_S = 60;
/**
 * Tickets one key may hold unredeemed at once; past it that key's oldest goes (a client that asked
 * and never connected asks again). The cap is per key, never shared, so one key asking in a loop can
 * only flush its own tickets, and the book's size stays bounded by the number of authorized keys.
 * Unsigned loopback clients share one allowance: they are all this machine, with one trust.
 */
export const MAX_PER_KEY = 16;
const UNSIGNED = "\0unsigned";

export interface TicketBook {
  /** A fresh ticket for the key (undefined: an unsigned loopback client). */
  issue(keyId: string | undefined): { ticket: string; expires_in_s: number };
  /** The ticket's key, once: undefined when it is unknown, used or expired. */
  redeem(ticket: string): { keyId: string | undefined } | undefined;
}

export function createTicketBook(now: () => number = Date.now): TicketBook {
  const tickets = new Map<string, { keyId: string | undefined; expires: number }>();
  /** Each key's outstanding tickets, oldest first. */
  const byKey = new Map<string, Set<string>>();
  const forget = (ticket: string, keyId: string | undefined) => {
    tickets.delete(ticket);
    const own = byKey.get(keyId ?? UNSIGNED);
    own?.delete(ticket);
    if (own?.size === 0) byKey.delete(keyId ?? UNSIGNED);
  };
  return {
    issue(keyId) {
      const at = now();
      for (const [t, entry] of tickets) if (entry.expires <= at) forget(t, entry.keyId);
      const own = byKey.get(keyId ?? UNSIGNED) ?? new Set<string>();
      while (own.size >= MAX_PER_KEY) forget(own.values().next().value as string, keyId);
      const ticket = randomBytes(32).toString("base64url");
      tickets.set(ticket, { keyId, expires: at + TICKET_TTL_S * 1000 });
      own.add(ticket);
      byKey.set(keyId ?? UNSIGNED, own);
      return { ticket, expires_in_s: TICKET_TTL_S };
    },
    redeem(ticket) {
      const entry = tickets.get(ticket);
      if (!entry) return undefined;
      forget(ticket, entry.keyId);
      return entry.expires > now() ? { keyId: entry.keyId } : undefined;
    },
  };
}
