/**
 * The channel contract's Slack driver: the fake Slack (test/fakes/slack-server.ts), whose Web API
 * the plugin's bolt client talks to through `api_root`, and deliveries as Slack makes them, an
 * `event_callback` envelope signed with the app's signing secret, POSTed to the events URL. Slack
 * has no call to register that URL (the user pastes it in the app's settings), so the driver
 * delivers to `<tunnel url>/slack/events` and `registeredUrl()` is undefined. Typing on Slack is the
 * ⏳ reaction on the member's message, so `typing()` counts reactions added.
 */
import { randomBytes } from "node:crypto";
import { type FakeSlack, messageEvent, startFakeSlack } from "../../fakes/slack-server.js";
import type { ChannelDriver } from "./driver.js";

const PATH = "/slack/events";

export function createDriver(): ChannelDriver {
  let slack: FakeSlack | undefined;
  let eventsUrl: string | undefined;
  const signingSecret = randomBytes(16).toString("hex");
  const fake = () => {
    if (!slack) throw new Error("the Slack driver was not started");
    return slack;
  };

  return {
    platform: "slack",
    limit: 3000,
    signed: true,
    async start({ allowed, fighter }) {
      slack = await startFakeSlack();
      const toml =
        `[channels.slack]\nallowlist = ["${allowed}"]\nfighter = "${fighter}"\n` +
        `api_root = "${slack.url}"\npath = "${PATH}"\n`;
      return { toml, env: { SLACK_BOT_TOKEN: slack.token, SLACK_SIGNING_SECRET: signingSecret } };
    },
    async ready({ tunnelUrl }) {
      eventsUrl = `${tunnelUrl}${PATH}`;
      const checked = () =>
        fake()
          .calls()
          .some((c) => c.method === "auth.test");
      for (let i = 0; i < 400 && !checked(); i++) await new Promise((r) => setTimeout(r, 50));
      if (!checked()) throw new Error("the daemon never called auth.test");
    },
    async deliver({ sender, chat, text, id, forge }) {
      if (!eventsUrl) throw new Error("the Slack driver is not ready");
      const event = messageEvent({ user: sender, channel: chat, text });
      const answer = await fake().deliver(eventsUrl, event, {
        signingSecret,
        ...(forge ? { forge } : {}),
        ...(id ? { eventId: id } : {}),
      });
      return answer.status;
    },
    posted: () =>
      fake()
        .posted()
        .map((m) => ({ chat: m.channel, text: m.text })),
    typing: () => fake().reactions().added,
    registeredUrl: () => undefined,
    async close() {
      await slack?.close();
    },
  };
}
