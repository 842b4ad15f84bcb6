#!/usr/bin/env node
// The published entry point: everything else is compiled to dist/ (no TypeScript loader at run time).
import "../dist/cli/index.js";
