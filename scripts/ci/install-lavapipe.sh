#!/usr/bin/env bash
# Mesa's lavapipe (software Vulkan on the CPU), so the GPU path (--device gpu, ONNX Runtime's
# WebGPU provider on Dawn) is tested on a machine with no GPU. Debian bookworm's own Mesa 22.3 is
# refused by Dawn ("shaderUniform*ArrayDynamicIndexing required"): it comes from
# bookworm-backports (Mesa 25). Where apt cannot reach it, the GPU tests skip, saying why.
set -euo pipefail

have_lavapipe() {
  local version
  version="$(dpkg-query -W -f='${Version}' mesa-vulkan-drivers 2>/dev/null || true)"
  [ -n "$version" ] && dpkg --compare-versions "$version" ge 24 && compgen -G '/usr/share/vulkan/icd.d/lvp_icd*.json' >/dev/null
}

if have_lavapipe; then
  echo "lavapipe: mesa-vulkan-drivers $(dpkg-query -W -f='${Version}' mesa-vulkan-drivers) already installed"
  exit 0
fi
command -v apt-get >/dev/null || { echo "lavapipe: no apt-get here; the GPU tests will skip"; exit 0; }
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
. /etc/os-release
if [ "${VERSION_CODENAME:-}" = "bookworm" ]; then
  $sudo tee /etc/apt/sources.list.d/stemsplit-bookworm-backports.sources >/dev/null <<'SOURCES'
Types: deb
URIs: http://deb.debian.org/debian
Suites: bookworm-backports
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SOURCES
  release=(-t bookworm-backports)
else
  release=()
fi
$sudo apt-get update -qq
$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${release[@]}" mesa-vulkan-drivers libvulkan1 >/dev/null
echo "lavapipe: installed mesa-vulkan-drivers $(dpkg-query -W -f='${Version}' mesa-vulkan-drivers)"
