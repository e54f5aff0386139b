-- Writes the value ARGV[2] under the fencing term ARGV[1] into the hash KEYS[1] (fields term and
-- value), unless the hash holds a higher term. Terms are decimal, without leading zeros, so
-- that comparing their lengths, then their digits, compares any two uint64 exactly, where Lua's
-- numbers (doubles) would round those above 2^53.
-- Returns {1, term} when written, {0, the stored term} when refused.
local stored = redis.call('HGET', KEYS[1], 'term')
if stored then
  if not string.match(stored, '^[1-9]%d*$') then
    return redis.error_reply('the term field is not a positive decimal number: ' .. stored)
  end
  local term = ARGV[1]
  if #stored > #term or (#stored == #term and stored > term) then
    return {0, stored}
  end
end
redis.call('HSET', KEYS[1], 'term', ARGV[1], 'value', ARGV[2])
return {1, ARGV[1]}
