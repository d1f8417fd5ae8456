-- prelude.lua: what every script starts with, inserted after its #!lua line when it is loaded
-- (store::scripts): Lua scripts cannot share code otherwise.
--
-- now_ms()               Redis's clock, ms since the Unix epoch: every time decision is taken
--                        on it, never on a worker's clock.
-- wrong_queue(key)       wrong_type(key, 'list'), a controlled queue's STRING marker allowed.
-- wrong_type(key, kind)  an error reply if `key` exists and is not of `kind`, else nil. Redis
--                        does not roll a script back when a command fails halfway, so a script
--                        that removes a job checks the keys it writes first, and fails before
--                        anything moved: `local bad = wrong_type(k, 'list') if bad then return bad end`.
local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local function wrong_type(key, kind)
  local found = redis.call('TYPE', key)['ok']
  if found ~= kind and found ~= 'none' then
    return redis.error_reply('WRONGTYPE ' .. key .. ' holds a ' .. found .. ', not a ' .. kind)
  end
end
-- wrong_type for a queue's list, which is a STRING (the `controlled` marker) once the queue is
-- under flow control (flow_lib.lua).
local function wrong_queue(key)
  if redis.call('TYPE', key)['ok'] == 'string' then return nil end
  return wrong_type(key, 'list')
end

