/**
 * Answers are serialised with their route's response schema (fast-json-stringify, as fastify does),
 * but each schema is compiled when its route first answers with that status, not when the route is
 * registered: a daemon has about a hundred documented answers and most are never sent in its life,
 * and compiling them all at start cost about 40 ms of CPU before the daemon was healthy.
 */
import { SerializerSelector } from "@fastify/fast-json-stringify-compiler";
import type { FastifyInstance } from "fastify";

export function compileSerializersLazily(app: FastifyInstance): void {
  const compile = SerializerSelector()({}, {});
  app.setSerializerCompiler((route) => {
    let serialize: ((data: unknown) => string) | undefined;
    return (data: unknown) => {
      serialize ??= compile({ ...route, httpStatus: route.httpStatus ?? "default" });
      return serialize(data);
    };
  });
}
