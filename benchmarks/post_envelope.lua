-- wrk script for benchmarks/appserver_ingest.py: every request POSTs a new
-- lineup.v1.message envelope (unique id "<prefix>-<thread>-<counter>") to
-- /v1/conversations/<conversation>/envelopes, rotating over the conversations.
--
-- Arguments (after "--" on the wrk command line):
--   1 envelope id prefix   2 agent id   3 agent API key
--   4 conversation id prefix   5 number of conversations
-- The body is written in the AppServer's canonical encoding (sorted keys), so the
-- bytes sent are the bytes stored. done() prints one "WRK_RESULT {json}" line.

local thread_count = 0

function setup(thread)
  thread_count = thread_count + 1
  thread:set("thread_id", thread_count)
end

function init(args)
  prefix = args[1]
  agent = args[2]
  conversation_prefix = args[4]
  conversations = tonumber(args[5])
  counter = 0
  headers = {
    ["Authorization"] = "Bearer " .. args[3],
    ["Content-Type"] = "application/json",
  }
end

local text = "benchmark envelope: the quick brown fox jumps over the lazy dog"

function request()
  counter = counter + 1
  local conversation = conversation_prefix .. (counter % conversations)
  local id = prefix .. "-" .. thread_id .. "-" .. counter
  local body = '{"conversation_id":"' .. conversation
    .. '","created_at":"2026-11-29T00:00:00Z","id":"' .. id
    .. '","payload":{"text":"' .. text
    .. '"},"sender":{"id":"' .. agent
    .. '","kind":"agent"},"type":"lineup.v1.message","v":1}'
  return wrk.format("POST", "/v1/conversations/" .. conversation .. "/envelopes", headers, body)
end

function done(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    'WRK_RESULT {"requests":%d,"duration_us":%d,"connect":%d,"read":%d,"write":%d,'
      .. '"status":%d,"timeout":%d,"p50_us":%d,"p99_us":%d}\n',
    summary.requests, summary.duration, e.connect, e.read, e.write, e.status, e.timeout,
    latency:percentile(50), latency:percentile(99)))
end
