#!/usr/bin/env bash
# Install what building and testing pano needs, from Debian's packages.
# Idempotent and quick when everything is there already. Needs root (or sudo).
# The services of the local stack (RabbitMQ, Kafka, Elasticsearch) are
# installed by deploy/local/pano-stack itself.
set -euo pipefail

packages=(
    # tests of deploy/ (compose file, dashboards, man pages, broker password hash)
    docker-compose yq openssl groff-base
    # build
    gcc meson ninja-build pkg-config
    librabbitmq-dev librdkafka-dev libcurl4-openssl-dev libyajl-dev libssl-dev
    zlib1g-dev libbz2-dev
    # pano-explorer: its HTTP server, and the charts its pages draw
    libmicrohttpd-dev libjs-chart.js
    # the embedded store (and its command-line shell, which tests use to look inside);
    # an exported workflow is compressed with zstd (its command decompresses one in the tests)
    libsqlite3-dev sqlite3 libzstd-dev zstd
    # the Fortran example of the C API (examples/fortran), built and run by the tests
    gfortran
    # tests, the demo and the benchmarks (column, bc)
    check valgrind jq curl bsdextrautils bc git
    # an AMQP client that is not pano's (tests publish with amqp-publish; bench/bridge.sh's
    # shell baseline is amqp-consume | kcat)
    amqp-tools
    # pano-indexer's tests: Kafka producer CLI, a TCP relay
    kcat socat
    # pano-transfer's sftp/scp and ftp tests start their own sshd (and ssh-keygen) and vsftpd
    openssh-server openssh-client vsftpd
    # pano-monitor's MPI test: a real mpirun (MPICH's runs as root, no flags)
    mpich
    # pano-explorer's tests in a real browser: headless Chromium driven by puppeteer-core (npm)
    chromium nodejs npm
    # maintainers' tools: tools/fresh-machine (a pristine Debian root), tools/pegasus-fixtures
    # (the real pegasus-monitord and pegasus-statistics from PyPI, in a virtual environment)
    mmdebstrap python3-venv
    # the Python package's test installs it with pip in a virtual environment, offline,
    # with Debian's setuptools and wheel
    python3-setuptools python3-wheel
)

# Packages whose command is enough, wherever it came from: a machine with
# Node.js from NodeSource has node and npm, and Debian's npm would conflict.
declare -A command_of=([nodejs]=node [npm]=npm)

missing=()
for p in "${packages[@]}"; do
    [[ -n ${command_of[$p]:-} ]] && command -v "${command_of[$p]}" >/dev/null && continue
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]} == 0)); then
    exit 0
fi

SUDO=
if ((EUID != 0)); then
    command -v sudo >/dev/null || { echo "install-deps: run as root (missing: ${missing[*]})" >&2; exit 1; }
    SUDO=sudo
fi
echo "install-deps: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
