/** The config.toml tables the Arena owns (its plugin.json `sections`, defaults filled in). */
export interface ArenaSettings {
  api: {
    body_limit_bytes: number;
    rate_limit_per_minute: number;
    cors_origins: string[];
    /** Open TCP connections to the API at once; more are closed on arrival. */
    max_connections: number;
    /** Open WebSockets from one peer address, and in total. */
    websocket_max_per_peer: number;
    websocket_max_total: number;
    /** Connection limits on both listeners (connections.ts). */
    max_connections_per_peer: number;
    idle_timeout_ms: number;
    headers_timeout_ms: number;
    request_timeout_ms: number;
    keep_alive_timeout_ms: number;
  };
  auth: { allow_unsigned_loopback: boolean };
  /** `[channels] webhook_listen`: the listener channel plugins' webhook routes are served on. */
  channels: { webhook_listen: string };
}
