'use strict';
// The protocol's decision rules, ported from docs/vectors.md (format epochal.vectors/1).
// Each function takes a vector's `input` and returns what its `expected` holds.
// Broker ids are small integers; -1 is "no leader" and, for a LEO, "unknown".

const NO_LEADER = -1;

const sorted = (xs) => [...xs].sort((a, b) => a - b);
const byLeader = (outcomes) => outcomes.sort((a, b) => a.leader - b.leader);

// -- seed 000 A 3.2: leader election when brokers come and go -----------------------------
function election({ ar, isr, leader, live, unclean_enabled }) {
  if (ar.length === 0) return { outcomes: [] };
  const liveIsr = isr.filter((b) => live.includes(b));
  if (leader !== NO_LEADER && live.includes(leader)) {
    if (liveIsr.length === isr.length) return { outcomes: [] };
    return { outcomes: [{ leader, isr: liveIsr, unclean: false }] };
  }
  if (liveIsr.length > 0) {
    return { outcomes: byLeader(liveIsr.map((b) => ({ leader: b, isr: liveIsr, unclean: false }))) };
  }
  const liveAr = ar.filter((b) => live.includes(b));
  if (unclean_enabled && liveAr.length > 0) {
    return { outcomes: byLeader(liveAr.map((b) => ({ leader: b, isr: [b], unclean: true }))) };
  }
  if (leader === NO_LEADER) return { outcomes: [] };
  return { outcomes: [{ leader: NO_LEADER, isr, unclean: false }] };
}

// -- preferred-replica election: the first assigned replica, if a live ISR member ---------
function preferredElection({ ar, isr, leader, live }) {
  const preferred = ar[0];
  if (ar.length === 0 || preferred === leader || !isr.includes(preferred) || !live.includes(preferred)) {
    return { outcomes: [] };
  }
  return { outcomes: [{ leader: preferred, isr, unclean: false }] };
}

// -- controlled shutdown: leadership and ISR membership move off a stopping broker --------
function controlledShutdown({ isr, leader, live, stopping }) {
  if (!isr.includes(stopping)) return { outcomes: [] };
  const rest = isr.filter((b) => b !== stopping);
  if (leader === stopping) {
    return { outcomes: byLeader(rest.filter((b) => live.includes(b)).map((b) => ({ leader: b, isr: rest, unclean: false }))) };
  }
  return { outcomes: rest.length > 0 ? [{ leader, isr: rest, unclean: false }] : [] };
}

// -- seed 000 F 3.2: a reassignment completes ---------------------------------------------
function reassignment({ ar, rar, isr, leader, live }) {
  if (!rar.every((b) => isr.includes(b))) return { outcomes: [] };
  const liveRar = rar.filter((b) => live.includes(b));
  const leaders = liveRar.includes(leader) ? [leader] : liveRar;
  const moving = new Set([...ar, ...rar]);
  // a StopReplica goes to a live broker only: the controller has no channel to another
  const removed = sorted([...moving].filter((b) => !rar.includes(b) && live.includes(b)));
  const newIsr = isr.filter((b) => rar.includes(b));
  return { outcomes: byLeader(leaders.map((b) => ({ leader: b, isr: newIsr, ar: rar, removed }))) };
}

// -- seed 000 C and KIPs 101/279/320: where a new follower truncates ----------------------
// `log` is the leader epochs of the records in offset order; `current` the epoch that ends
// at the log's end (the leader's current epoch), or null for a follower's own log.
function endOffsetForEpoch(log, epoch, current) {
  if (current !== null && epoch === current) return log.length;
  const later = log.findIndex((e) => e > epoch);
  return later === -1 ? log.length : later;
}

function truncation(input) {
  const { rule, follower_log: follower } = input;
  if (rule === 'hw') return { offset: Math.min(input.follower_hw, follower.length) };
  const { leader_log: leader, leader_epoch: leaderEpoch } = input;
  if (follower.length === 0) return { offset: 0 };
  const latest = follower[follower.length - 1];
  if (rule === 'kip101') {
    return { offset: Math.min(follower.length, endOffsetForEpoch(leader, latest, leaderEpoch)) };
  }
  if (rule !== 'kip279' && rule !== 'kip320') throw new Error(`unknown truncation rule ${rule}`);
  // rounds: ask again while the leader answers an epoch the follower never had
  let log = follower;
  while (log.length > 0) {
    const known = [...leader, leaderEpoch].filter((e) => e <= log[log.length - 1]);
    if (known.length === 0) return { offset: 0 };
    const common = Math.max(...known);
    const own = log.filter((e) => e <= common);
    if (own.length === 0) return { offset: 0 };
    const ours = Math.max(...own);
    const followerEnd = endOffsetForEpoch(log, ours, null);
    if (ours !== common) {
      log = log.slice(0, followerEnd);
      continue;
    }
    return { offset: Math.min(endOffsetForEpoch(leader, common, leaderEpoch), followerEnd) };
  }
  return { offset: 0 };
}

// -- seed 000 G: the leader's high watermark ----------------------------------------------
function hwAdvance({ leader, leo, hw, isr, follower_leo: followerLeo }) {
  const leos = isr.map((b) => (b === leader ? leo : followerLeo[String(b)]));
  return { hw: Math.max(hw, Math.min(...leos)) };
}

// -- seed 000 G, KIP-320: who may leave or join the ISR -----------------------------------
function isr(input) {
  const f = input.follower_leo;
  if (input.change === 'shrink') return { eligible: input.in_isr && f < input.leo };
  const eligible = !input.in_isr && input.assigned && f !== -1 && f >= input.hw
    && (!input.kip320 || f >= input.epoch_start);
  return { eligible };
}

// -- seeds 002, 003, 000 C: LeaderAndISR acceptance ----------------------------------------
function control({ known_controller_epoch: knownCe, broker_epoch: brokerEpoch, replica_leader_epoch: replicaEpoch, request }) {
  if (request.controller_epoch < knownCe) return { decision: 'stale_controller_epoch' };
  if (request.max_broker_epoch < brokerEpoch) return { decision: 'stale_broker_epoch' };
  if (request.leader_epoch <= replicaEpoch) return { decision: 'stale_leader_epoch' };
  return { decision: 'accept' };
}

// -- seed 003: the max broker epoch and whom it fences ------------------------------------
function maxBrokerEpoch({ broker_epochs: epochs, live, recipient_broker_epoch: own }) {
  const max = Math.max(...live.map((b) => epochs[String(b)]));
  return { max_broker_epoch: max, decision: max < own ? 'stale_broker_epoch' : 'accept' };
}

// -- seed 001 (KIP-599): the controller-mutation quota's token bucket ---------------------
function quota({ quota: q, samples, window_s: window, strict, requests }) {
  const rate = q;
  const burst = q * samples * window;
  const throttleMs = (k) => (k >= 0 ? 0 : Math.ceil((-k / rate) * 1000));
  let tokens = null;
  let last = 0;
  const answers = [];
  for (const { time_s: now, mutations } of requests) {
    if (mutations <= 0) {
      answers.push({ admitted: true, throttle_ms: 0, tokens: null });
      continue;
    }
    if (tokens === null) {
      tokens = burst;
      last = now;
    } else if (now > last) {
      tokens = Math.min(tokens + (now - last) * rate, burst);
      last = now;
    }
    if (strict && tokens < 0) {
      answers.push({ admitted: false, throttle_ms: throttleMs(tokens), tokens });
      continue;
    }
    tokens -= mutations;
    answers.push({ admitted: true, throttle_ms: strict ? 0 : throttleMs(tokens), tokens });
  }
  return { answers };
}

// -- seed 000 question 7: a consumer's fetch between the HW and the LEO -------------------
function consumerFetch({ leo, hw, offset, max_records: max }) {
  if (offset < 0 || offset > leo) return { error: 'offset_out_of_range' };
  return { records: [offset, Math.max(offset, Math.min(hw, leo, offset + max))] };
}

const FAMILIES = {
  election,
  preferred_election: preferredElection,
  controlled_shutdown: controlledShutdown,
  reassignment,
  truncation,
  hw_advance: hwAdvance,
  isr,
  control,
  max_broker_epoch: maxBrokerEpoch,
  quota,
  consumer_fetch: consumerFetch,
};

module.exports = { FAMILIES, FORMAT: 'epochal.vectors/1' };
