# common.sh: what pano-stack's services share, sourced by pano-stack (which
# sets SCRIPT_DIR): messages, the stack's configuration (configure_stack: data
# dir, ports, node counts, services, versions, users, from the options, the
# environment and the data dir's stack.conf), and helpers to run, watch and
# stop server processes, install packages and lock the stack. Uses nothing of
# the service files.

log() { printf 'pano-stack: %s\n' "$*" >&2; }
die() { printf 'pano-stack: error: %s\n' "$*" >&2; exit 1; }

# flag > environment > remembered in the data dir > default
pick() { # NAME FLAGVALUE DEFAULT
  local name=$1 flag=$2 def=$3 v
  v=${flag:-${!name:-${SAVED[$name]:-$def}}}
  if ! [[ $v =~ ^[0-9]+$ ]] || ((v < 1 || v > 65535)); then die "$name: not a port: $v"; fi
  printf '%s' "$v"
}

# Is SERVICE one of those up/down/status act on (--only)?
want() { [[ $SERVICES == *" $1 "* ]]; }

pom_prop() { sed -n "s:.*<$1>\\(.*\\)</$1>.*:\\1:p" "$POM" | head -n1; }

# The settings every command uses, from the OPT_* variables of the command
# line, the environment and the data dir; dies on a bad value.
configure_stack() {
  DATA=${OPT_DIR:-${PANO_STACK_DIR:-/var/tmp/pano-stack}}
  [[ $DATA == /* ]] || DATA="$(pwd)/$DATA"
  DATA=${DATA%/}
  [[ $DATA =~ ^/[A-Za-z0-9._/+-]+$ ]] ||
    die "data dir must be an absolute path of [A-Za-z0-9._/+-]: $DATA"
  STACK_CONF="$DATA/stack.conf"

  # Ports remembered from the last `up` in this data dir (key=value, digits only).
  declare -gA SAVED=()
  if [[ -r $STACK_CONF ]]; then
    while IFS='=' read -r k v; do
      [[ $k =~ ^[A-Z_]+$ && $v =~ ^[0-9]+$ ]] && SAVED[$k]=$v
    done <"$STACK_CONF"
  fi

  AMQP_PORT=$(pick PANO_AMQP_PORT "$OPT_AMQP" 5672)
  MGMT_PORT=$(pick PANO_RABBITMQ_MGMT_PORT "$OPT_MGMT" 15672)
  KAFKA_PORT=$(pick PANO_KAFKA_PORT "$OPT_KAFKA" 9092)
  KCTL_PORT=$(pick PANO_KAFKA_CONTROLLER_PORT "$OPT_KCTL" 9093)
  ES_PORT=$(pick PANO_ES_PORT "$OPT_ES" 9200)
  KAFKA_NODES=$(pick PANO_KAFKA_NODES "$OPT_KNODES" 1)
  ES_NODES=$(pick PANO_ES_NODES "$OPT_ENODES" 1)
  ((KAFKA_NODES <= 9 && ES_NODES <= 9)) || die "at most 9 Kafka and 9 Elasticsearch nodes"
  # RabbitMQ's own default; a port above 45535 then falls in the kernel's
  # ephemeral range, where any outgoing connection may hold it first.
  DIST_PORT=$(pick PANO_RABBITMQ_DIST_PORT "$OPT_DIST" $((AMQP_PORT + 20000)))
  EPMD_PORT=4369
  ((KAFKA_PORT + 2 * KAFKA_NODES < 65536 && KCTL_PORT + 2 * KAFKA_NODES < 65536 &&
    ES_PORT + 100 + ES_NODES < 65536)) || die "ports too high"
  # Every port of the stack, once each.
  ALL_PORTS=("$AMQP_PORT" "$MGMT_PORT" "$DIST_PORT")
  for ((n = 0; n < KAFKA_NODES; n++)); do ALL_PORTS+=($((KAFKA_PORT + 2 * n)) $((KCTL_PORT + 2 * n))); done
  for ((n = 0; n < ES_NODES; n++)); do ALL_PORTS+=($((ES_PORT + n)) $((ES_PORT + 100 + n))); done
  [[ $(printf '%s\n' "${ALL_PORTS[@]}" | sort -u | wc -l) == "${#ALL_PORTS[@]}" ]] ||
    die "these ports overlap: ${ALL_PORTS[*]} (choose ports further apart)"

  # The services up/down/status act on.
  SERVICES=" "
  IFS=',' read -r -a ONLY_LIST <<<"${OPT_ONLY:-${PANO_STACK_ONLY:-rabbitmq,kafka,elasticsearch}}"
  for svc in "${ONLY_LIST[@]}"; do
    case $svc in
      rabbitmq|kafka|elasticsearch) SERVICES+="$svc " ;;
      *) die "--only: unknown service '$svc' (rabbitmq, kafka, elasticsearch)" ;;
    esac
  done
  [[ $SERVICES != " " ]] || die "--only: no service given"

  TIMEOUT=${OPT_TIMEOUT:-${PANO_STACK_TIMEOUT:-300}}
  [[ $TIMEOUT =~ ^[0-9]+$ ]] || die "timeout must be a number of seconds: $TIMEOUT"
  OFFLINE=${OPT_OFFLINE:-${PANO_STACK_OFFLINE:-}}
  [[ $OFFLINE == 0 ]] && OFFLINE=""
  KAFKA_PARTITIONS=${PANO_KAFKA_PARTITIONS:-4}
  [[ $KAFKA_PARTITIONS =~ ^[1-9][0-9]*$ ]] || die "PANO_KAFKA_PARTITIONS: $KAFKA_PARTITIONS"
  KAFKA_HEAP=${PANO_KAFKA_HEAP:-768m}
  ES_HEAP=${PANO_ES_HEAP:-1g}
  [[ $KAFKA_HEAP =~ ^[0-9]+[kKmMgG]$ && $ES_HEAP =~ ^[0-9]+[kKmMgG]$ ]] ||
    die "PANO_KAFKA_HEAP/PANO_ES_HEAP must look like 768m or 1g"

  POM="$SCRIPT_DIR/pom.xml"
  [[ -r $POM ]] || die "missing $POM (pano-stack must stay next to its pom.xml)"
  KAFKA_VERSION=$(pom_prop kafka.version)
  ES_VERSION=$(pom_prop es.version)
  [[ -n $KAFKA_VERSION && -n $ES_VERSION ]] || die "cannot read versions from $POM"

  ARCH=$(dpkg --print-architecture 2>/dev/null || echo amd64)
  JAVA_HOME_DIR=${PANO_STACK_JAVA_HOME:-/usr/lib/jvm/java-17-openjdk-$ARCH}
  JAVA="$JAVA_HOME_DIR/bin/java"

  IS_ROOT=""
  [[ $EUID -eq 0 ]] && IS_ROOT=1
  SVC_USER=${PANO_STACK_USER:-pano-stack}
  RMQ_USER=rabbitmq
  RMQ_HOME=/var/lib/rabbitmq    # holds the Erlang cookie that rabbitmqctl uses
  if [[ -z $IS_ROOT ]]; then
    SVC_USER=$(id -un); RMQ_USER=$SVC_USER; RMQ_HOME=${HOME:?HOME must be set}
  fi
}

as_user() {
  local user=$1; shift
  if [[ -n $IS_ROOT && $user != root ]]; then
    setpriv --reuid="$user" --regid="$user" --init-groups -- "$@"
  else
    "$@"
  fi
}

# True if something accepts TCP connections on 127.0.0.1:PORT.
port_open() {
  # shellcheck disable=SC2016 # $1 belongs to the inner shell
  timeout 2 bash -c 'exec 3<>"/dev/tcp/127.0.0.1/$1"' _ "$1" 2>/dev/null
}

# Print the pid in PIDFILE if that process is alive and was started by this
# stack in this data dir (its environment has PANO_STACK_DIR=$DATA).
live_pid() {
  local pidfile=$1 pid
  [[ -r $pidfile ]] || return 1
  pid=$(head -c 32 "$pidfile" | tr -dc 0-9)
  [[ -n $pid && -r /proc/$pid/environ ]] || return 1
  # (stderr first: the process may be gone by the time the file is opened)
  tr '\0' '\n' 2>/dev/null <"/proc/$pid/environ" |
    grep -qxF "PANO_STACK_DIR=$DATA" || return 1
  printf '%s' "$pid"
}

# spawn PIDFILE LOGFILE USER CMD...: start CMD in its own session with a clean
# environment, as USER, output to LOGFILE (the previous one is kept as
# LOGFILE.1); PIDFILE gets its pid.
spawn() {
  local pidfile=$1 logfile=$2 user=$3; shift 3
  [[ ! -s $logfile ]] || mv -f "$logfile" "$logfile.1"
  : >"$logfile"
  [[ -z $IS_ROOT ]] || chown "$user:" "$logfile"
  local -a priv=()
  if [[ -n $IS_ROOT && $user != root ]]; then
    priv=(setpriv --reuid="$user" --regid="$user" --init-groups --)
  fi
  # shellcheck disable=SC2016 # expanded by the inner shell
  setsid bash -c 'echo $$ >"$0"; ulimit -n "$(ulimit -Hn)" 2>/dev/null || true; exec "$@"' \
    "$pidfile" "${priv[@]}" "$@" </dev/null >>"$logfile" 2>&1 9>&- &
}

# Environment every server process starts with (nothing else leaks in).
base_env() {
  printf '%s\n' env -i "PATH=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin" \
    "LANG=C.UTF-8" "PANO_STACK_DIR=$DATA"
}

# stop_pid NAME PID GRACE: SIGTERM, wait GRACE seconds, then SIGKILL.
stop_pid() {
  local name=$1 pid=$2 grace=$3 i
  kill -TERM "$pid" 2>/dev/null || return 0
  for ((i = 0; i < grace * 5; i++)); do
    kill -0 "$pid" 2>/dev/null || return 0
    sleep 0.2
  done
  log "$name (pid $pid) did not stop within ${grace}s: killing it"
  kill -KILL "$pid" 2>/dev/null || true
  sleep 0.5
}

show_log_tail() { # FILE...
  local f
  for f in "$@"; do
    [[ -s $f ]] || continue
    printf -- '--- last lines of %s (stack frames left out) ---\n' "$f" >&2
    grep -vE '^[[:space:]]+at ' "$f" | tail -n 20 | cut -c1-400 >&2
  done
}

# ----------------------------------------------------------------- install --
APT_UPDATED=""
apt_install() { # PACKAGE...
  [[ -z $OFFLINE ]] || die "missing packages ($*) and --offline given"
  [[ -n $IS_ROOT ]] || die "missing packages ($*): install them as root, or run pano-stack as root"
  command -v apt-get >/dev/null || die "missing packages ($*) and no apt-get"
  log "installing Debian packages: $*"
  local policy=/usr/sbin/policy-rc.d created=""
  # Packages must not start their own daemons (e.g. a system RabbitMQ on 5672).
  if [[ ! -e $policy ]]; then
    printf '#!/bin/sh\nexit 101\n' >"$policy"; chmod 755 "$policy"; created=1
  fi
  mkdir -p /usr/share/man/man1   # openjdk's postinst needs it on slim images
  local rc=0
  {
    if [[ -z $APT_UPDATED ]]; then
      DEBIAN_FRONTEND=noninteractive apt-get update -q && APT_UPDATED=1
    fi &&
      DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "$@"
  } >"$DATA/apt.log" 2>&1 || rc=$?
  [[ -z $created ]] || rm -f "$policy"
  ((rc == 0)) || { show_log_tail "$DATA/apt.log"; die "apt-get failed (see $DATA/apt.log)"; }
}

ensure_users() {
  [[ -n $IS_ROOT ]] || return 0
  if ! id -u "$SVC_USER" >/dev/null 2>&1; then
    log "creating system user $SVC_USER"
    useradd --system --user-group --no-create-home --home-dir /nonexistent \
      --shell /usr/sbin/nologin "$SVC_USER"
  fi
  id -u "$RMQ_USER" >/dev/null 2>&1 || die "no user $RMQ_USER (rabbitmq-server package broken?)"
  local u
  for u in "$SVC_USER" "$RMQ_USER"; do
    as_user "$u" test -x "$DATA" ||
      die "user $u cannot reach $DATA: choose a data dir whose parents are world-searchable (e.g. under /var/tmp)"
  done
}

mvn_run() {
  local -a mvn=(mvn -B -q -Dstyle.color=never -f "$POM")
  [[ -z $OFFLINE ]] || mvn+=(-o)
  "${mvn[@]}" "$@" >>"$DATA/maven.log" 2>&1 ||
    { show_log_tail "$DATA/maven.log"; die "maven failed (see $DATA/maven.log)"; }
}

save_conf() {
  cat >"$STACK_CONF.tmp" <<EOF
PANO_AMQP_PORT=$AMQP_PORT
PANO_RABBITMQ_MGMT_PORT=$MGMT_PORT
PANO_RABBITMQ_DIST_PORT=$DIST_PORT
PANO_KAFKA_PORT=$KAFKA_PORT
PANO_KAFKA_CONTROLLER_PORT=$KCTL_PORT
PANO_ES_PORT=$ES_PORT
PANO_KAFKA_NODES=$KAFKA_NODES
PANO_ES_NODES=$ES_NODES
EOF
  mv "$STACK_CONF.tmp" "$STACK_CONF"
}

lock_stack() {
  exec 9>"$DATA/.lock"
  flock -w 300 9 || die "another pano-stack up/down holds $DATA/.lock"
}

check_ports_free() { # SERVICE PORT...
  local svc=$1 p; shift
  for p in "$@"; do
    ! port_open "$p" ||
      die "cannot start $svc: port 127.0.0.1:$p is already in use (another service? see 'ss -ltnp')"
  done
}
