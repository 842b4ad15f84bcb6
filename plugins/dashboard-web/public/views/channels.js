/**
 * `#/channels`: each configured channel (`GET /api/v1/channels`): connected or not, who answers,
 * the allowlist's size, messages in and out, refused deliveries, the last message and the last
 * problem. Channels are set up from the CLI (`spar channel setup`), never from here.
 */

import { api } from "../lib/api.js";
import { when } from "../lib/format.js";
import { Badge, Heading, Loading, Problem, useData, useLiveEvents } from "../lib/ui.js";
import { html } from "../vendor/standalone.module.js";

export function ChannelsView() {
  const { data, error, reload } = useData(() => api("GET", "/api/v1/channels"), []);
  useLiveEvents((event) => event.kind.startsWith("channel.") && reload());
  return html`<section aria-labelledby="view-title">
    <${Heading}>Channels<//>
    <${Problem} error=${error} />
    ${
      data === undefined
        ? html`<${Loading} what="channels" />`
        : data.channels.length === 0
          ? html`<p>No channel is configured. <code>spar channel setup telegram</code> (or <code>slack</code>, <code>discord</code>) adds one; restart the daemon afterwards.</p>`
          : html`<${ChannelTable} channels=${data.channels} />`
    }
  </section>`;
}

function ChannelTable({ channels }) {
  return html`<table class="channels">
    <thead>
      <tr>
        <th scope="col">Platform</th><th scope="col">State</th><th scope="col">Fighter</th>
        <th scope="col">Allowed</th><th scope="col">In / out</th><th scope="col">Refused</th>
        <th scope="col">Last message</th><th scope="col">Problem</th>
      </tr>
    </thead>
    <tbody>
      ${channels.map(
        (c) => html`<tr key=${c.platform}>
          <th scope="row">${c.platform}<div class="muted small">${c.mode}${c.webhook_url ? ` · ${c.webhook_url}` : ""}</div></th>
          <td><${Badge} value=${c.connected ? "connected" : "disconnected"} /></td>
          <td>${c.fighter}</td>
          <td>${c.allowlist_size}</td>
          <td>${c.inbound} / ${c.outbound}</td>
          <td>${c.refused.signature} signature, ${c.refused.allowlist} allowlist, ${c.refused.rate} rate</td>
          <td>${when(c.last_inbound_at)}</td>
          <td>${c.error ?? "—"}</td>
        </tr>`,
      )}
    </tbody>
  </table>`;
}
