/**
 * Runs inside the sandbox (never in the daemon): `node egress-forward.mjs <socket> <port> -- <argv…>`.
 * Listens on the sandbox's own loopback at `port`, where the proxy variables point, and carries each
 * connection to the daemon's egress proxy over the Unix socket the sandbox was lent; then runs the
 * command, and ends as it ends. Nothing else leaves the sandbox: its network namespace has no other
 * interface. Node built-ins only: it is mounted alone, without the package around it.
 */
import { spawn } from "node:child_process";
import { connect, createServer } from "node:net";

const [socket, portText, separator, ...command] = process.argv.slice(2);
if (!socket || !portText || separator !== "--" || command.length === 0) {
  process.stderr.write("usage: egress-forward <socket> <port> -- <program> [args…]\n");
  process.exit(2);
}

const server = createServer((client) => {
  const upstream = connect(socket);
  client.pipe(upstream);
  upstream.pipe(client);
  const end = () => {
    client.destroy();
    upstream.destroy();
  };
  client.once("error", end);
  upstream.once("error", end);
  client.once("close", end);
  upstream.once("close", end);
});

server.listen(Number(portText), "127.0.0.1", () => {
  const child = spawn(command[0] as string, command.slice(1), { stdio: "inherit" });
  for (const signal of ["SIGTERM", "SIGINT", "SIGHUP"] as const) {
    process.on(signal, () => child.kill(signal));
  }
  child.once("error", (err: NodeJS.ErrnoException) => {
    process.stderr.write(`${command[0]}: ${err.code === "ENOENT" ? "not found" : err.message}\n`);
    process.exit(127);
  });
  child.once("exit", (code, signal) => {
    server.close();
    if (signal) {
      process.removeAllListeners(signal);
      process.kill(process.pid, signal);
    }
    process.exit(code ?? 1);
  });
});
