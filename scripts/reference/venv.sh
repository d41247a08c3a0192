# scripts/reference/venv.sh — the reference environment (sourced): torch, torchvision,
# Pillow and transformers 5.25 (the reference implementation of Muse Glimmer) in
# $SQUEEZE_REFERENCE_VENV (default build/reference-venv), for the optional scripts that
# need them (fixtures, the small vision-language model). Not part of scripts/test.
# transformers 5.25 declares a dependency (`kernels`) that needs Python >= 3.12; Debian 12
# has 3.11, so it is installed with --no-deps plus the dependencies its wheel declares
# (the model code does not use `kernels`).
ensure_reference_venv() {
  VENV="${SQUEEZE_REFERENCE_VENV:-$ROOT/build/reference-venv}"
  # Debian's python3 lacks ensurepip unless python3-venv is installed; without it `venv`
  # leaves a folder with no pip; re-running venv on it fills the pip in.
  if [ ! -x "$VENV/bin/pip" ]; then
    python3 -m venv "$VENV" || {
      echo "$(basename "$0"): could not create $VENV (on Debian/Ubuntu: apt-get install python3-venv)" >&2
      exit 1
    }
  fi
  if ! "$VENV/bin/python" -c "import torch, torchvision, PIL, transformers; assert transformers.__version__ == '5.25.0'" 2>/dev/null; then
    # torchvision and Pillow: the image processor's backend and its image type
    "$VENV/bin/pip" install -q torch torchvision pillow numpy safetensors
    "$VENV/bin/pip" install -q --no-deps transformers==5.25.0
    "$VENV/bin/pip" install -q "huggingface-hub>=2.4.0,<3.0" "packaging>=20.0" "pyyaml>=5.1" "regex>=2025.10.22" \
      "tokenizers>=0.23.1,<0.24.0" typer "safetensors>=0.8.0" "tqdm>=4.60"
    # for scripts/compare-convert-with-llamacpp: llama.cpp's converter and llama-cpp-python need these
    "$VENV/bin/pip" install -q sentencepiece diskcache jinja2
  fi
  # the DFlash fixture and the projector files are written with the gguf package
  if ! "$VENV/bin/python" -c "import gguf, jinja2" 2>/dev/null; then
    "$VENV/bin/pip" install -q gguf jinja2
  fi
}
