// Messages per second of one daemon against three sharing one PostgreSQL and one Redis:
//   eval "$(bash scripts/ci-services.sh)" && node bench/cluster.mjs [--runs N] [--messages N]
// In the same run, against a model that answers at once, 64 clients over 100 fighters:
// - one daemon on the defaults (SQLite file, in-process bus): the single-machine baseline;
// - one daemon on store-postgres + bus-redis: what the shared servers cost one node;
// - three daemons on store-postgres + bus-redis, the clients spread over them.
// The model server and the load generator share the same cores as the daemons (and, here, the
// database servers), so the three-node row measures coordination, not added hardware.
import { randomBytes, randomUUID } from "node:crypto";
import { parseArgs } from "node:util";
import { Redis } from "ioredis";
import pg from "pg";
import {
  createFighters,
  fmtSpread,
  isMain,
  pool,
  post,
  prepareHome,
  printRows,
  row,
  spread,
  startDaemon,
  startMiniLlm,
  UNLIMITED_TOML,
} from "./lib.mjs";

const CLIENTS = 64;

async function rate(urls, fighters, total) {
  const ms = await pool(total, CLIENTS, (i) =>
    post(`${urls[i % urls.length]}/api/v1/fighters/${fighters[i % fighters.length]}/message`, {
      message: `m${i}`,
    }),
  );
  return total / (ms / 1000);
}

async function measure(llm, { nodes, clusterToml, runs, messages }) {
  const daemons = [];
  try {
    for (let n = 0; n < nodes; n++) {
      const { home, port } = await prepareHome(llm.url, UNLIMITED_TOML + clusterToml);
      daemons.push(await startDaemon(llm.url, { existing: { home, port } }));
    }
    const urls = daemons.map((d) => d.url);
    const fighters = await createFighters(urls[0], "c-", 100);
    // Every node has seen the fighters (the spawns' announcements, or the store on first use).
    await rate(urls, fighters, 300);
    const rates = [];
    for (let r = 0; r < runs; r++) rates.push(await rate(urls, fighters, messages));
    return spread(rates);
  } finally {
    for (const d of daemons) await d.stop({ keepHome: false });
  }
}

export async function cluster({ runs = 3, messages = 1000 } = {}) {
  const database = process.env.SPAR_TEST_DATABASE_URL;
  const redisUrl = process.env.SPAR_TEST_REDIS_URL;
  if (!database || !redisUrl) {
    console.log(
      'cluster: skipped: set SPAR_TEST_DATABASE_URL and SPAR_TEST_REDIS_URL (eval "$(bash scripts/ci-services.sh)")',
    );
    return [];
  }
  process.env.SPAR_DATABASE_URL = database;
  process.env.SPAR_REDIS_URL = redisUrl;
  process.env.SPAR_MASTER_KEY = randomBytes(32).toString("hex");
  const llm = await startMiniLlm({ record: false });
  const made = [];
  const clusterToml = () => {
    const id = randomUUID().replaceAll("-", "").slice(0, 12);
    made.push(id);
    return `\n[plugins]\nstore = "store-postgres"\nbus = "bus-redis"\n[store.postgres]\nschema = "b_${id}"\npool_max = 16\n[redis]\nprefix = "b${id}"\n`;
  };
  try {
    const local = await measure(llm, { nodes: 1, clusterToml: "", runs, messages });
    const one = await measure(llm, { nodes: 1, clusterToml: clusterToml(), runs, messages });
    const shared = clusterToml();
    const three = await measure(llm, { nodes: 3, clusterToml: shared, runs, messages });
    const rows = [
      row("64 clients over 100 fighters, 1 node, SQLite + in-process bus", fmtSpread(local, "msg/s"), "—", {
        note: `${messages} messages per round, median of ${runs}`,
      }),
      row("the same, 1 node on PostgreSQL + Redis", fmtSpread(one, "msg/s"), fmtSpread(local, "msg/s"), {
        ratio: one.median / local.median,
      }),
      row("the same, 3 nodes on PostgreSQL + Redis", fmtSpread(three, "msg/s"), fmtSpread(one, "msg/s"), {
        ratio: three.median / one.median,
        note: "clients spread over the three; every turn takes its fighter's lease in Redis",
      }),
    ];
    printRows(rows);
    return rows;
  } finally {
    llm.close();
    const client = new pg.Client({ connectionString: database });
    await client.connect();
    for (const id of made) await client.query(`DROP SCHEMA IF EXISTS "b_${id}" CASCADE`);
    await client.end();
    const redis = new Redis(redisUrl);
    for (const id of made) {
      const keys = await redis.keys(`b${id}:*`);
      if (keys.length > 0) await redis.del(...keys);
    }
    redis.disconnect();
  }
}

if (isMain(import.meta)) {
  const { values } = parseArgs({
    options: { runs: { type: "string", default: "3" }, messages: { type: "string", default: "1000" } },
  });
  await cluster({ runs: Number(values.runs), messages: Number(values.messages) });
}
