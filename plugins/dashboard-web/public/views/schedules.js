/**
 * `#/schedules`: the messages fighters scheduled for themselves (`schedule_add`), which run as
 * turns with no one watching: each with its fighter, next run, cron and last run, and a Remove
 * button (`DELETE /api/v1/schedules/:id`), so the operator can see and stop every one.
 */

import { mayOperate } from "../lib/access.js";
import { api } from "../lib/api.js";
import { clip, when } from "../lib/format.js";
import { href } from "../lib/router.js";
import { Badge, Heading, Loading, Problem, useData } from "../lib/ui.js";
import { html, useState } from "../vendor/standalone.module.js";

export function SchedulesView() {
  const list = useData(() => api("GET", "/api/v1/schedules"), []);
  const [problem, setProblem] = useState(undefined);
  const remove = async (id) => {
    setProblem(undefined);
    try {
      await api("DELETE", `/api/v1/schedules/${encodeURIComponent(id)}`);
    } catch (err) {
      setProblem(err);
    }
    list.reload();
  };
  const { data, error } = list;
  return html`<section aria-labelledby="view-title">
    <${Heading}>Schedules<//>
    <${Problem} error=${error ?? problem} />
    ${
      data === undefined
        ? html`<${Loading} what="schedules" />`
        : data.schedules.length === 0
          ? html`<p class="muted">No scheduled messages. Fighters holding the <code>schedule</code> grant add them with <code>schedule_add</code>.</p>`
          : html`<${ScheduleTable} schedules=${data.schedules} remove=${remove} />`
    }
  </section>`;
}

function ScheduleTable({ schedules, remove }) {
  return html`<table class="schedules">
    <caption>${schedules.length} scheduled messages, soonest first; each arrives as a new turn of its fighter</caption>
    <thead>
      <tr>
        <th scope="col">Fighter</th><th scope="col">Message</th><th scope="col">Next run</th>
        <th scope="col">Repeats</th><th scope="col">Last run</th><th scope="col">Action</th>
      </tr>
    </thead>
    <tbody>
      ${schedules.map(
        (s) => html`<tr key=${s.id} data-schedule=${s.id}>
          <th scope="row"><a href=${href("fighters", s.fighter_id)}>${s.fighter}</a></th>
          <td>${clip(s.message, 200)}<div class="muted small"><code>${s.id}</code></div></td>
          <td>${when(s.next_run_at)}</td>
          <td>${s.cron ? html`<code>${s.cron}</code><div class="muted small">${s.timezone}</div>` : "once"}</td>
          <td>${s.last_run_at ? html`<${Badge} value=${s.last_status} /> ${when(s.last_run_at)}` : "—"}</td>
          <td>
            ${
              mayOperate()
                ? html`<button type="button" class="danger" onClick=${() => remove(s.id)} aria-label=${`Remove schedule ${s.id} of ${s.fighter}`}>Remove</button>`
                : html`<span class="muted small">needs scope operator</span>`
            }
          </td>
        </tr>`,
      )}
    </tbody>
  </table>`;
}
