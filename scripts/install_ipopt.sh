#!/usr/bin/env bash
# Build IPOPT's AMPL driver (the `ipopt` executable that Pyomo's SolverFactory('ipopt') calls)
# from Debian packages: the IPOPT 3.11.9 library (coinor-libipopt-dev, linear solver MUMPS),
# the AMPL Solver Library (libamplsolver-dev) and the driver's two source files from Debian's
# source package coinor-ipopt. Nothing is downloaded from outside Debian's archive.
# Takes ~15 s when the apt packages are already installed.
#
# Usage: bash scripts/install_ipopt.sh DEST_BIN_DIR      (e.g. .venv/bin)
set -euo pipefail
dest=${1:?usage: install_ipopt.sh DEST_BIN_DIR}
mkdir -p "$dest"
dest=$(cd "$dest" && pwd)
if [ -x "$dest/ipopt" ] && "$dest/ipopt" -v >/dev/null 2>&1; then
  echo "[install_ipopt] ipopt already installed at $dest/ipopt"; exit 0
fi

die() {
  echo "error: $*" >&2
  cat >&2 <<'EOF'
Other ways to get an `ipopt` executable (any one on PATH, or copied to .venv/bin, will do):
  - conda-forge:  conda install -c conda-forge ipopt
  - IDAES:        idaes get-extensions   (downloads binaries; needs access to GitHub)
  - your distribution's package or a build from https://github.com/coin-or/Ipopt
Then rerun the command.
EOF
  exit 1
}

if ! command -v apt-get >/dev/null 2>&1 || [ ! -f /etc/debian_version ]; then
  die "scripts/install_ipopt.sh builds IPOPT from Debian packages, but this is not a Debian-like system (no apt-get)."
fi
SUDO=""
if [ "$(id -u)" != 0 ]; then
  command -v sudo >/dev/null 2>&1 || die "not root and sudo is not available to run apt-get."
  SUDO="sudo"
fi
export DEBIAN_FRONTEND=noninteractive
codename=$(. /etc/os-release && echo "${VERSION_CODENAME:-bookworm}")
distro=$(. /etc/os-release && echo "${ID:-debian}")

pkgs=(coinor-libipopt-dev libamplsolver-dev dpkg-dev g++ pkg-config)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

# `apt-get source` needs a deb-src entry.
has_src() {
  grep -rqsE '^[[:space:]]*Types:.*deb-src' /etc/apt/sources.list.d/ \
    || grep -rqsE '^[[:space:]]*deb-src[[:space:]]' /etc/apt/sources.list /etc/apt/sources.list.d/
}
need_update=0
if ! has_src; then
  if [ "$distro" != debian ]; then
    die "no deb-src entry in /etc/apt/sources.list*; enable the source repositories of '$distro' and rerun."
  fi
  echo "[install_ipopt] adding a deb-src entry for Debian $codename"
  printf 'Types: deb-src\nURIs: http://deb.debian.org/debian\nSuites: %s\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' \
    "$codename" | $SUDO tee /etc/apt/sources.list.d/pyomo-lap-src.sources >/dev/null
  need_update=1
fi
if [ ${#missing[@]} -gt 0 ] || ! apt-cache showsrc coinor-ipopt 2>/dev/null | grep -q '^Package:'; then
  need_update=1
fi
if [ $need_update = 1 ]; then
  echo "[install_ipopt] apt-get update"
  $SUDO apt-get update -qq || die "apt-get update failed."
fi
if [ ${#missing[@]} -gt 0 ]; then
  echo "[install_ipopt] apt-get install ${missing[*]}"
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null \
    || die "apt-get install ${missing[*]} failed."
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
echo "[install_ipopt] fetching Debian's coinor-ipopt source package"
( cd "$work" && apt-get source -qq coinor-ipopt >"$work/source.log" 2>&1 ) || {
  cat "$work/source.log" >&2; die "apt-get source coinor-ipopt failed."
}
srcdir=$(find "$work" -maxdepth 3 -type d -path '*/Ipopt/src' | head -n 1)
[ -n "$srcdir" ] && [ -f "$srcdir/Apps/AmplSolver/ampl_ipopt.cpp" ] \
  || die "unexpected layout of the coinor-ipopt source package (no Ipopt/src/Apps/AmplSolver)."

echo "[install_ipopt] compiling the AMPL driver into $dest/ipopt"
(
  cd "$srcdir"
  g++ -O2 -o "$dest/ipopt" Apps/AmplSolver/ampl_ipopt.cpp Apps/AmplSolver/AmplTNLP.cpp \
    -IApps/AmplSolver -I/usr/include/coin -ICommon -ILinAlg -ILinAlg/TMatrices -IInterfaces \
    -IAlgorithm -I/usr/include/ampl-netlib-solvers \
    -DHAVE_CSTDDEF -DHAVE_CSTRING -DHAVE_CSTDIO -DHAVE_CMATH -DHAVE_CSTDLIB -DHAVE_CCTYPE \
    -DHAVE_CASSERT -DHAVE_CFLOAT -DHAVE_CSTDARG \
    -lipopt -lamplsolver -ldl
) || { rm -f "$dest/ipopt"; die "compiling the IPOPT AMPL driver failed."; }

version=$("$dest/ipopt" -v 2>&1 | head -n 1) || { rm -f "$dest/ipopt"; die "the built $dest/ipopt does not run."; }
echo "[install_ipopt] installed $dest/ipopt: $version"
