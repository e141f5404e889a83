#!/usr/bin/env bash
# Install headless Chromium from Debian's packages (package `chromium`) for the browser test of
# the interactive report (tests/test_report.py: the report opens without a console error, its
# figures render, its screenshot is not blank) and for benchmarks/report.py.
# Idempotent: does nothing when a Chromium is found ($PYOMO_LAP_CHROMIUM, chromium,
# chromium-browser, google-chrome on PATH). Installs only where apt-get is available and we are
# root (or have sudo); otherwise says so and exits 0 (outside CI the browser test is then
# skipped; in CI, CI=true, it fails).
#
# Usage: bash scripts/install_chromium.sh
set -uo pipefail
say() { echo "[install_chromium] $*"; }
for exe in "${PYOMO_LAP_CHROMIUM:-}" chromium chromium-browser google-chrome google-chrome-stable; do
  if [ -n "$exe" ] && command -v "$exe" >/dev/null 2>&1; then
    exit 0
  fi
done
if ! command -v apt-get >/dev/null 2>&1; then
  say "no Chromium and no apt-get: install Chromium (or Chrome) yourself, or point PYOMO_LAP_CHROMIUM at it; the report's browser test is skipped until then (it fails in CI)"
  exit 0
fi
SUDO=""
if [ "$(id -u)" != 0 ]; then
  if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
    SUDO="sudo -n"
  else
    say "no Chromium, and not root (no password-less sudo) to run 'apt-get install chromium': install it yourself; the report's browser test is skipped until then (it fails in CI)"
    exit 0
  fi
fi
export DEBIAN_FRONTEND=noninteractive
if ! apt-cache policy chromium 2>/dev/null | grep -q 'Candidate: [0-9]'; then
  say "apt-get update"
  $SUDO apt-get update -qq >/dev/null || { say "warning: apt-get update failed"; exit 0; }
fi
say "apt-get install chromium (headless browser for the report's test, about a minute)"
if ! $SUDO apt-get install -y -qq --no-install-recommends chromium >/dev/null; then
  say "warning: 'apt-get install chromium' failed; the report's browser test is skipped (it fails in CI)"
  exit 0
fi
say "installed $(chromium --version 2>/dev/null | head -n 1)"
