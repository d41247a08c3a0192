# scripts/common.sh — set-up steps shared by scripts/test and scripts/demo (sourced, not run).
# Idempotent: installs only what is missing, reconfigures only when needed.

set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

# Debian packages the build and tests need.
SQUEEZE_APT_PACKAGES=(
  build-essential cmake ninja-build pkg-config
  libgtest-dev libgmock-dev libbenchmark-dev
  libopenblas-dev
  libopenmpi-dev openmpi-bin
  nlohmann-json3-dev libcpp-httplib-dev
  libpng-dev libjpeg62-turbo-dev libssl-dev  # images; SHA-256 keys of the image-feature cache
  chromium  # the server's chat page is tested in headless Chromium
  libutf8proc-dev
  python3 python3-venv
)

log() { printf '\033[1m[squeeze]\033[0m %s\n' "$*" >&2; }

ensure_apt_packages() {
  local missing=()
  for p in "${SQUEEZE_APT_PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  if [ "${#missing[@]}" -eq 0 ]; then return 0; fi
  log "installing Debian packages: ${missing[*]}"
  local sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

# Python for the independent checks (numpy references, the gguf package reading our
# files, the openai client, pytest-xdist to run the checks on both cores, jsonschema to
# validate constrained output independently): a project-local
# virtual environment. Entries are PyPI names, with ":module" where the import name differs.
SQUEEZE_PY_PACKAGES=(numpy gguf pytest jinja2 openai pytest-xdist:xdist jsonschema)
VENV="$ROOT/.venv"
ensure_python_env() {
  if [ ! -x "$VENV/bin/python" ]; then
    log "creating $VENV"
    # Debian's python3 (not a pyenv shim) so the venv works on any fresh machine.
    local py=/usr/bin/python3
    [ -x "$py" ] || py="$(command -v python3)"
    "$py" -m venv "$VENV"
  fi
  local need=()
  for p in "${SQUEEZE_PY_PACKAGES[@]}"; do
    "$VENV/bin/python" -c "import ${p##*:}" 2>/dev/null || need+=("${p%%:*}")
  done
  if [ "${#need[@]}" -gt 0 ]; then
    log "installing Python packages: ${need[*]}"
    "$VENV/bin/pip" install -q --disable-pip-version-check "${need[@]}"
  fi
}

# configure <build-dir> <build-type> [extra cmake args...]: always re-run (cheap when
# nothing changed) so options given here reach an existing build directory too.
# ccache, where installed, makes the several build types and rebuilds cheap; CI runs
# fine without it.
configure() {
  local dir="$1" type="$2"
  shift 2
  local launcher=()
  if command -v ccache >/dev/null; then
    launcher=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
  fi
  cmake -S "$ROOT" -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE="$type" "${launcher[@]}" "$@" >/dev/null
}

# stage NAME COMMAND...: runs a step and logs its wall time (the per-stage times the
# test command is budgeted by).
stage() {
  local name="$1" t0=$SECONDS
  shift
  "$@"
  log "stage '$name' took $((SECONDS - t0)) s"
}

# configure_and_build <build-dir> <build-type> [extra cmake args...]
configure_and_build() {
  local dir="$1" type="$2"
  configure "$@"
  log "building $type in $dir"
  cmake --build "$dir" -j "$(nproc)"
}

BUILD_RELEASE="$ROOT/build/release"
BUILD_SANITIZE="$ROOT/build/sanitize"
BUILD_TSAN="$ROOT/build/tsan"

# Training stages (scripts/train-models, scripts/train-muse-student); $OUT and $SQ set by the caller.
# train_stage NAME CMD... — runs CMD unless NAME's model exists; resumes from its checkpoint.
train_stage() {
  local name="$1"; shift
  local model="$OUT/$name.f32.gguf" ckpt="$OUT/$name.ckpt.gguf"
  if [ -f "$model" ]; then log "$name: $model exists, skipped"; return 0; fi
  local resume=()
  [ -f "$ckpt" ] && resume=(--resume "$ckpt")
  log "$name: $*"
  local t0=$SECONDS
  "$@" "${resume[@]}" --checkpoint "$ckpt" --loss-csv "$OUT/$name.loss.csv" --plot "$OUT/$name.loss.png" \
    --out "$model" 2>&1 | tee "$OUT/$name.log"
  [ "${PIPESTATUS[0]}" -eq 0 ] || { log "$name failed"; exit 1; }
  echo "$((SECONDS - t0))" > "$OUT/$name.seconds"
}
