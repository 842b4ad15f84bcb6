// The yardstick for bench/startup.mjs: the smallest fastify server that answers a health route.
import Fastify from "fastify";

const app = Fastify({ logger: false });
app.get("/api/v1/health", async () => ({ status: "ok" }));
await app.listen({ host: "127.0.0.1", port: Number(process.argv[2]) });
