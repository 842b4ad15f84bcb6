/**
 * Approvals (issue 30, part A; README "Approvals"): every move call is allowed, asked or denied by
 * the policy (policy.ts); an asked call waits in its turn for an answer from the API or the CLI,
 * recorded in the plugin's collections (records.ts) so any node of a cluster can answer it; a
 * gorilla's or a schedule's turn, with no one to ask, is refused at once.
 */
import { definePlugin, provideGauge } from "../../sdk/index.js";
import { createChatPrompts } from "./chat.js";
import { createGate } from "./gate.js";
import type { ApprovalSettings } from "./policy.js";
import { createRecords } from "./records.js";
import { createResumer } from "./resume.js";
import { addApprovalRoutes } from "./routes.js";
import { createSpendAsk } from "./spend-ask.js";

declare module "../../sdk/index.js" {
  interface SparEventMap {
    /** A call waits for an answer: `GET /api/v1/approvals/<request_id>` shows it (its arguments are not in the event). */
    "approval.requested": {
      request_id: string;
      fighter_id: string;
      fighter: string;
      bout_id: string;
      turn_id: string;
      move: string;
      expires_at: string;
      /** The turn had taken in untrusted content. */
      tainted: boolean;
    };
    /** A request ended: approved or denied (`answered_by` the key), expired or cancelled. */
    "approval.answered": { request_id: string; fighter_id: string; status: string; answered_by: string };
  }
}

export default definePlugin<{ approvals: ApprovalSettings }>({
  id: "policy-approvals",
  apply({ hooks, data, events, log, ring }, sections) {
    const settings = sections.approvals;
    const records = createRecords(data);
    // Approve / Deny buttons in the chat a turn came from (part D): chat.ts.
    const chat = createChatPrompts({ ring, records, events, log });
    const gate = createGate({ settings, records, events, log, ring, chat });
    const resumer = createResumer({ ring, records, events, log });
    // Early, before the Arena listens: a turn left waiting is back in its fighter's queue first.
    hooks.daemon.ready.tap(() => resumer.start(), { phase: "early" });
    events.subscribe((event) => {
      if (event.kind !== "approval.answered") return;
      void records
        .read(event.request_id)
        .then((request) => request && resumer.answered(request.turn_id))
        .catch((err: unknown) =>
          log.warn("approvals: could not read an answered request", { error: String(err) }),
        );
    });
    // Last: a call the kernel, a gorilla or any other plugin refuses is never asked about.
    hooks.move.beforeCall.tap((info) => gate.beforeCall(info), { phase: "last" });
    hooks.move.afterCall.tap((outcome, info) => gate.afterCall(outcome, info));
    // A budget past its limit with on_exceed = "ask" (the budgets plugin): asked like a call.
    const spendAsk = createSpendAsk({ settings, records, events, log, chat, announce: gate.announce });
    hooks.spend.ask.tap((question) => spendAsk(question));
    hooks.arena.routes.tap((routes) => addApprovalRoutes(routes, { records, settings, events }));
    // Read when metrics are scraped (README "Metrics and traces"); withdrawn as the daemon closes.
    const withdraw = provideGauge("approvals_pending", () => records.pending());
    hooks.daemon.close.tap(() => withdraw());
    // Before the Arena opens the webhook listener (normal phase): no press finds a channel unanswered.
    hooks.daemon.ready.tap(() => chat.attach(), { phase: "early" });
    if (settings.mode === "off") {
      log.warn('approvals are off ([approvals] mode = "off"): every call a grant allows runs unasked');
    }
  },
});
