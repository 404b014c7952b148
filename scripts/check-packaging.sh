#!/usr/bin/env bash
# Static checks of everything that installs Berth on lab machines; CI runs it (and so does
# test/e2e/install.test.ts). Every check runs, then the script fails if any of them failed.
#
#   1. bash -n on every shell script under scripts/
#   2. systemd-analyze verify on both units, rendered as install.sh renders them (ExecStart pointing at
#      this machine's node and this repository's bin/berth.js, since verify rejects missing
#      executables), plus the settings the issue asks of them (Restart=always, KillMode=process, …)
#   3. vagrant validate on the Vagrantfile (--ignore-provider: no hypervisor is needed), for the
#      default and for other NUM_AGENTS and NUM_SERVERS, rejected values of both, the provisioning
#      scripts it generates for one server (SQLite) and three (etcd), and the join-token trigger's
#      Ruby run against stand-in machines
#   4. scripts/lab-etcd-check.sh: the lab's etcd membership script run for three members on
#      loopback with real etcd and etcdctl (in order, re-run, a recreated VM, all at once)
#
# Missing tools are installed from Debian's packages when this runs as root (systemd for
# systemd-analyze, vagrant ≈ 100 MB with its Ruby); a tool that cannot be had is a failure, not a skip.
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck source=scripts/lib.sh
. "$repo/scripts/lib.sh"
export DEBIAN_FRONTEND=noninteractive

work="$(mktemp -d "${TMPDIR:-/tmp}/berth-check-packaging.XXXXXX")"
trap 'rm -rf "$work"' EXIT
failures=()
started_at="$(berth_now)"

pass() { printf '  ok    %s\n' "$*"; }
fail() {
  printf '  FAIL  %s\n' "$*"
  failures+=("$1")
}
elapsed_since() { awk -v a="$1" -v b="$(berth_now)" 'BEGIN { printf "%.1fs", b - a }'; }

# ---- 1. shell syntax ---------------------------------------------------------------

echo "1. bash -n"
t0="$(berth_now)"
count=0
while IFS= read -r -d '' script; do
  count=$((count + 1))
  if out="$(bash -n "$script" 2>&1)"; then :; else fail "bash -n ${script#"$repo"/}: $out"; fi
done < <(find "$repo/scripts" -name '*.sh' -type f -print0 | LC_ALL=C sort -z)
[ "$count" -gt 0 ] || fail "no shell scripts found under scripts/"
pass "$count scripts parse ($(elapsed_since "$t0"))"
# A linter when the machine has one (Debian: shellcheck); its absence is not a failure.
if berth_have shellcheck; then
  if out="$(cd "$repo" && shellcheck -x --severity=warning scripts/install.sh scripts/uninstall.sh scripts/lab-etcd.sh scripts/lab-etcd-check.sh scripts/check-packaging.sh 2>&1)"; then
    pass "shellcheck (warnings and errors) on install.sh, uninstall.sh, lab-etcd*.sh, check-packaging.sh"
  else
    fail "shellcheck: $out"
  fi
fi

# ---- 2. systemd units -------------------------------------------------------------------

echo "2. systemd-analyze verify"
t0="$(berth_now)"
if why="$(berth_ensure_tool systemd-analyze systemd)"; then
  node_bin="$(command -v node || true)"
  if [ -z "$node_bin" ]; then
    fail "node is not installed, so no ExecStart= can point at a real executable"
  else
    mkdir -p "$work/units" "$work/etc"
    for unit in berth-server.service berth-agent.service; do
      # The same substitution install.sh makes.
      sed -e "s#@BERTH_NODE@#$node_bin#g" -e "s#@BERTH_PREFIX@#$repo#g" -e "s#@BERTH_ETC_DIR@#$work/etc#g" \
        "$repo/scripts/systemd/$unit" >"$work/units/$unit"
      if grep -q '@BERTH_' "$work/units/$unit"; then fail "$unit: a placeholder install.sh does not fill in"; fi
    done
    # rc alone is not enough: unknown keys and bad values are warnings with exit status 0.
    if out="$(SYSTEMD_LOG_COLOR=0 systemd-analyze verify "$work/units/berth-server.service" "$work/units/berth-agent.service" 2>&1)"; then rc=0; else rc=$?; fi
    ours="$(printf '%s\n' "$out" | grep -E 'berth-(server|agent)\.service' || true)"
    if [ "$rc" -ne 0 ] || [ -n "$ours" ]; then
      fail "systemd-analyze verify (exit $rc): ${out:-no output}"
    else
      pass "both units verify ($(berth_first_line "$(systemd-analyze --version)"))"
      [ -z "$out" ] || printf '        (about other units: %s)\n' "$out"
    fi
    # What the issue asks of the units; verify does not know our intent.
    before=${#failures[@]}
    want() {
      local unit="$1" line="$2"
      grep -qxF "$line" "$work/units/$unit" || fail "$unit lacks '$line'"
    }
    for unit in berth-server.service berth-agent.service; do
      want "$unit" "Restart=always"
      want "$unit" "After=network-online.target docker.service"
      want "$unit" "Wants=network-online.target docker.service"
      grep -q '^LimitNOFILE=[0-9]' "$work/units/$unit" || fail "$unit sets no LimitNOFILE"
      grep -q '^TasksMax=' "$work/units/$unit" || fail "$unit sets no TasksMax"
      grep -q '^RestartSec=[1-9]' "$work/units/$unit" || fail "$unit sets no RestartSec"
      want "$unit" "WantedBy=multi-user.target"
    done
    want berth-agent.service "KillMode=process"
    [ ${#failures[@]} -gt "$before" ] || pass "units carry Restart=always, network/docker ordering, limits, KillMode=process (agent)"
  fi
else
  fail "systemd-analyze unavailable: $why"
fi
printf '        (%s)\n' "$(elapsed_since "$t0")"

# ---- 3. Vagrantfile -------------------------------------------------------------------------

echo "3. vagrant validate"
t0="$(berth_now)"
if why="$(berth_ensure_tool vagrant vagrant)"; then
  # Vagrant's state goes to the scratch dir, not into the repository (.vagrant/) or $HOME, and it
  # must not phone home for version checks.
  export VAGRANT_DOTFILE_PATH="$work/vagrant-dot" VAGRANT_HOME="$work/vagrant-home" VAGRANT_CHECKPOINT_DISABLE=1
  validate() { (cd "$repo" && env "$@" vagrant validate --ignore-provider --no-color 2>&1); }
  for agents in 2 0 5; do
    if out="$(validate NUM_AGENTS="$agents")" && grep -q 'validated successfully' <<<"$out"; then
      machines="$(grep -c 'Ignoring provider config' <<<"$out" || true)"
      if [ "$machines" -eq $((agents + 1)) ]; then pass "NUM_AGENTS=$agents: valid, $machines machine(s)"
      else fail "NUM_AGENTS=$agents: expected $((agents + 1)) machines, vagrant saw $machines: $out"; fi
    else
      fail "vagrant validate with NUM_AGENTS=$agents: $out"
    fi
  done
  if out="$(validate NUM_AGENTS=two)"; then fail "NUM_AGENTS=two was accepted: $out"
  else pass "NUM_AGENTS=two is rejected with: $(berth_first_line "$(grep -o 'NUM_AGENTS=.*' <<<"$out" || true)")"; fi
  # Several servers: NUM_SERVERS server VMs plus the agents.
  for servers in 3 5; do
    if out="$(validate NUM_SERVERS="$servers" NUM_AGENTS=2)" && grep -q 'validated successfully' <<<"$out"; then
      machines="$(grep -c 'Ignoring provider config' <<<"$out" || true)"
      if [ "$machines" -eq $((servers + 2)) ]; then pass "NUM_SERVERS=$servers NUM_AGENTS=2: valid, $machines machines"
      else fail "NUM_SERVERS=$servers: expected $((servers + 2)) machines, vagrant saw $machines: $out"; fi
    else
      fail "vagrant validate with NUM_SERVERS=$servers: $out"
    fi
  done
  for servers in 2 0 9; do
    if out="$(validate NUM_SERVERS="$servers")"; then fail "NUM_SERVERS=$servers was accepted: $out"
    else pass "NUM_SERVERS=$servers is rejected with: $(berth_first_line "$(grep -o 'NUM_SERVERS=.*' <<<"$out" || true)")"; fi
  done

  # The join-token trigger runs only on a real `vagrant up`; run its Ruby here against stand-ins
  # for the server VM, with the Vagrantfile copied so the token file lands in the scratch dir.
  ruby_bin="$(dirname "$(readlink -f "$(command -v vagrant)")")/ruby"
  berth_have "$ruby_bin" || ruby_bin="$(command -v ruby || true)"
  mkdir -p "$work/lab"
  cp "$repo/Vagrantfile" "$work/lab/Vagrantfile"
  cat >"$work/lab/trigger_check.rb" <<'RUBY'
module Vagrant
  def self.require_version(*) end
  def self.configure(*) end # the machine definitions are vagrant validate's business
end
load File.join(__dir__, "Vagrantfile")

# A stand-in for the server VM's communicator: answers `cat` with the cluster token and
# `token create` with a fresh join token, and records every command.
Comm = Struct.new(:token, :ready, :commands) do
  def ready? = ready
  def sudo(cmd, _opts = {})
    (self.commands ||= []) << cmd
    out = cmd.include?(" token create ") ? "berth1::#{"b" * 64}::abc123.0123456789abcdef\n" : token
    yield :stdout, out if out && block_given?
    out ? 0 : 1
  end
end
Ui = Struct.new(:lines) { def info(msg) = lines << msg }
Machine = Struct.new(:communicate, :state, :ui, :provider_name)
Env = Struct.new(:server) { def machine(_name, _provider) = server }
State = Struct.new(:id)
def mode(path) = File.stat(path).mode & 0o777

token = "berth1::#{"a" * 64}::secret"
agent = Machine.new(nil, State.new(:running), Ui.new([]), :virtualbox)
File.delete(HOST_TOKEN) if File.exist?(HOST_TOKEN)

# 1. a provisioned server: the cluster token lands on the host, private to its owner
fetch_join_token(Env.new(Machine.new(Comm.new("#{token}\n", true), State.new(:running), Ui.new([]), :virtualbox)), agent)
raise "token not written" unless File.read(HOST_TOKEN) == "#{token}\n"
raise "token file mode #{format("%o", mode(HOST_TOKEN))}" unless mode(HOST_TOKEN) == 0o600

# 2. no server VM, but a token from before: kept
fetch_join_token(Env.new(Machine.new(Comm.new(nil, false), State.new(:not_created), Ui.new([]), :virtualbox)), agent)

# 3. no server VM and no token: a clear error instead of an agent that cannot join
File.delete(HOST_TOKEN)
begin
  fetch_join_token(Env.new(Machine.new(Comm.new(nil, false), State.new(:not_created), Ui.new([]), :virtualbox)), agent)
  raise "no error without a server"
rescue RuntimeError => e
  raise unless e.message.include?("vagrant up server")
end

# 4. an agent gets a join token of its own, expiring, 0600 on the host; never the cluster token
comm = Comm.new("#{token}\n", true)
server = Env.new(Machine.new(comm, State.new(:running), Ui.new([]), :virtualbox))
make_agent_join_token(server, agent, "agent1")
path = agent_join_token_path("agent1")
raise "agent token: #{File.read(path).inspect}" unless File.read(path) == "berth1::#{"b" * 64}::abc123.0123456789abcdef\n"
raise "agent token file mode #{format("%o", mode(path))}" unless mode(path) == 0o600
raise "agent token made by #{comm.commands.inspect}" unless comm.commands == ["#{BERTH_CLI} token create --ttl 1h --description 'vagrant lab: agent1'"]

# 5. once the agent is up, its token is revoked on the server and gone from the host
revoke_agent_join_token(server, agent, "agent1")
raise "not revoked: #{comm.commands.inspect}" unless comm.commands.last == "#{BERTH_CLI} token delete abc123"
raise "agent token left on the host" if File.exist?(path)

# 6. a token left by a failed attempt is revoked before the next is made
make_agent_join_token(server, agent, "agent2")
make_agent_join_token(server, agent, "agent2")
raise "old token not revoked first: #{comm.commands.inspect}" unless comm.commands.last(2) == ["#{BERTH_CLI} token delete abc123", "#{BERTH_CLI} token create --ttl 1h --description 'vagrant lab: agent2'"]
revoke_agent_join_token(server, agent, "agent2")
puts "trigger ok"
RUBY
  if [ -z "$ruby_bin" ]; then
    fail "no ruby to run the join-token trigger with"
  elif out="$("$ruby_bin" "$work/lab/trigger_check.rb" 2>&1)" && [ "$out" = "trigger ok" ]; then
    pass "token triggers: the cluster token from the server VM (0600), an old one kept, a clear failure without one; each agent's own 1 h join token (0600), revoked and deleted once it is up"
  else
    fail "join-token trigger: $out"
  fi

  # The provisioning scripts the Vagrantfile hands each VM, rendered with the Vagrantfile's own
  # functions: what each one runs is checked here, and each must parse as bash.
  cat >"$work/lab/render_check.rb" <<'RUBY'
module Vagrant
  def self.require_version(*) end
  def self.configure(*) end
end
load File.join(__dir__, "Vagrantfile")
out = ARGV.fetch(0)
Dir.mkdir(out) unless Dir.exist?(out)
def check(what, ok) = (raise "#{what}" unless ok)
sub = ENV.fetch("BERTH_SUBNET", "192.168.56")
servers = SERVERS.each_index.map { |i| server_script(i) }
agent = agent_script("agent1", "#{sub}.11")
servers.each_with_index { |text, i| File.write(File.join(out, "server#{i + 1}.sh"), text) }
File.write(File.join(out, "agent1.sh"), agent)
if NUM_SERVERS == 1
  check("one server: SQLite, no etcd", !servers[0].include?("etcd"))
  check("one server: no join token for it", !servers[0].include?("install.sh server --port 6443 --token"))
  check("one server: agents name it alone", agent.include?("--server https://#{sub}.10:6443 \"${token_args[@]}\""))
  check("one server: hands out no cluster token", !servers[0].include?("/vagrant/.berth-token"))
else
  ips = ["#{sub}.10"] + (2..NUM_SERVERS).map { |n| "#{sub}.#{200 + n}" }
  etcd = ips.map { |ip| "http://#{ip}:2379" }.join(",")
  members = (["server"] + (2..NUM_SERVERS).map { |n| "server#{n}" }).zip(ips).map { |n, ip| "#{n}=#{ip}" }.join(",")
  urls = ips.map { |ip| "https://#{ip}:6443" }
  servers.each_with_index do |text, i|
    name = i.zero? ? "server" : "server#{i + 1}"
    check("#{name}: an etcd member of #{members}", text.include?("lab-etcd.sh --name #{name} --members #{members} "))
    check("#{name}: its server on every member", text.include?("install.sh server --port 6443 --etcd-servers #{etcd}"))
    check("#{name}: etcd before the server", text.index("lab-etcd.sh") < text.index("install.sh server"))
    joins = text.include?("--etcd-servers #{etcd} --token-file /vagrant/.berth-token\n")
    check("#{name}: #{i.zero? ? "founds the cluster without" : "joins with"} the shared token", joins == !i.zero?)
    own_first = ([urls[i]] + (urls - [urls[i]])).join(",")
    check("#{name}: its agent prefers it, then the others", text.include?("install.sh agent --server #{own_first} --token-file"))
    check("#{name}: hands out the token", text.include?("install -m 0600") == i.zero?)
  end
  check("agents get every server", agent.include?("--server #{urls.join(",")} \"${token_args[@]}\""))
end
check("agents join with their own token, never the cluster's", agent.include?("token_args=(--token-file /vagrant/.berth-join/agent1)") && !agent.include?(".berth-token"))
check("an agent's copy of its token is removed", agent.include?("rm -f /vagrant/.berth-join/agent1"))
puts "render ok"
RUBY
  for servers in 1 3; do
    rendered="$work/lab/rendered-$servers"
    if [ -z "$ruby_bin" ]; then
      fail "no ruby to render the provisioning scripts with"
    elif out="$(NUM_SERVERS="$servers" "$ruby_bin" "$work/lab/render_check.rb" "$rendered" 2>&1)" && [ "$out" = "render ok" ]; then
      bad=""
      for script in "$rendered"/*.sh; do
        bash -n "$script" 2>/dev/null || bad="$bad $(basename "$script")"
      done
      if [ -z "$bad" ]; then pass "NUM_SERVERS=$servers: provisioning scripts parse and run what they should"
      else fail "NUM_SERVERS=$servers: provisioning scripts that do not parse:$bad"; fi
    else
      fail "NUM_SERVERS=$servers provisioning scripts: $out"
    fi
  done
  printf '        (%s, %s)\n' "$(vagrant --version)" "$(elapsed_since "$t0")"
else
  fail "vagrant cannot be installed here, so the Vagrantfile is NOT validated: $why"
fi

# ---- 4. The lab's etcd members -----------------------------------------------------------------

echo "4. lab etcd membership (three members on loopback)"
t0="$(berth_now)"
if why="$(berth_ensure_tool etcd etcd-server)" && why="$(berth_ensure_tool etcdctl etcd-client)"; then
  if out="$(bash "$repo/scripts/lab-etcd-check.sh" 2>&1)"; then
    while IFS= read -r line; do pass "${line#ok }"; done < <(grep '^ok ' <<<"$out")
  else
    fail "lab-etcd-check.sh: $out"
  fi
else
  fail "no etcd/etcdctl, so the lab's etcd membership is NOT checked: $why"
fi
printf '        (%s)\n' "$(elapsed_since "$t0")"

# ---- Summary ----------------------------------------------------------------------------------

echo
if [ ${#failures[@]} -eq 0 ]; then
  echo "packaging checks passed in $(elapsed_since "$started_at")"
else
  echo "packaging checks FAILED (${#failures[@]}) in $(elapsed_since "$started_at")"
  exit 1
fi
