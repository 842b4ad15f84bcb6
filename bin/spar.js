#!/usr/bin/env node
// The published entry point: everything else is compiled to dist/ (no TypeScript loader at run time).
import module from "node:module";

// Node 22.1+ keeps compiled code between runs, so later starts skip most of the compiling; older
// Nodes go on without it.
module.enableCompileCache?.();
await import("../dist/cli/index.js");
