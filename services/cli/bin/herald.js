#!/usr/bin/env node
// The installed entry point; the code is compiled to dist/ by `npm run build`.
import '../dist/main.js';
