// 6. Listing 10,000 fighters: GET /api/v1/fighters timed several times once they exist, beside the
// same request while only the default fighter exists; and the daemon's RSS with them, beside its RSS
// before they were spawned. Both baselines come from the same daemon in the same run.
import { withSpar } from "../suite/daemon.mjs";
import { request, timed } from "../suite/http.mjs";
import { startFakeModel } from "../suite/model.mjs";
import { figure } from "../suite/report.mjs";
import { spawnFighters } from "../suite/spar-api.mjs";
import { median, medianSpread, num, sleep } from "../suite/stats.mjs";

/** Times `gets` listings (after one untimed); returns the times and the last answer's size. */
async function listings(api, gets, headers = {}) {
  let bytes = 0;
  let count = 0;
  await request(`${api}/fighters`, { headers });
  const times = await timed(gets, async () => {
    const res = await request(`${api}/fighters`, { headers });
    if (res.status !== 200) throw new Error(`GET /fighters answered ${res.status}`);
    bytes = Buffer.byteLength(res.body);
    count = res.headers["content-encoding"] ? undefined : JSON.parse(res.body).fighters.length;
  });
  return { times, bytes, count };
}

export async function listing({ fighters, gets }) {
  const llm = await startFakeModel();
  try {
    return await withSpar(llm.url, { load: true }, async (daemon) => {
      await sleep(2000);
      const rssBefore = daemon.rss();
      const small = await listings(daemon.api, gets);
      const spawned = await spawnFighters(daemon.api, "list-", fighters, 16);
      const big = await listings(daemon.api, gets);
      const zipped = await listings(daemon.api, gets, { "accept-encoding": "gzip" });
      await sleep(2000);
      const rssAfter = daemon.rss();
      if (big.count !== fighters + 1)
        throw new Error(`the listing held ${big.count} fighters, not ${fighters + 1}`);
      return {
        title: "6. Listing 10,000 fighters",
        notes: [
          `${fighters} minimal fighters spawned, 16 requests at a time, in ${(spawned.ms / 1000).toFixed(1)} s (${num(fighters / (spawned.ms / 1000))} spawns/s)`,
          `GET /api/v1/fighters timed ${gets} times (after one untimed) without Accept-Encoding: ${big.count} fighters, ${num(big.bytes / 1024)} KiB`,
          `with Accept-Encoding: gzip (as fetch and browsers send it): ${medianSpread(zipped.times, "ms", 1)}, ${num(zipped.bytes / 1024)} KiB on the wire`,
          "RSS: VmRSS 2 s after the daemon was healthy (1 fighter), and 2 s after the last listing",
        ],
        figures: [
          figure({
            label: `GET /api/v1/fighters with ${big.count.toLocaleString("en-US")} fighters`,
            measured: medianSpread(big.times, "ms", 1),
            baseline: `with 1 fighter ${medianSpread(small.times, "ms", 1)}`,
            ratio: median(big.times) / median(small.times),
            goal: "< 50 ms",
            met: median(big.times) < 50,
          }),
          figure({
            label: `daemon RSS with ${big.count.toLocaleString("en-US")} fighters`,
            measured: `${num(rssAfter, 1)} MiB`,
            baseline: `with 1 fighter ${num(rssBefore, 1)} MiB`,
            ratio: rssAfter / rssBefore,
          }),
        ],
      };
    });
  } finally {
    await llm.close();
  }
}
