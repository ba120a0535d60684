#!/usr/bin/env bash
# Rebuilds the HTML report's page, report/dist/report_template.html, from
# report/src (npm ci installs the locked uPlot and esbuild from
# report/package-lock.json; esbuild bundles and minifies; report/build.mjs
# inlines everything into one file). Commit the result: the C++ build embeds
# report/dist/report_template.html (report/embed_template.cmake) and never
# runs npm itself. Needs Node >= 18 and npm.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo/report"
npm ci --no-audit --no-fund
npm run build
