-- Conditional Patch and Delete of one JSON document, atomically (a Lua script runs alone).
--
-- KEYS[1]  the document's Redis key
-- ARGV[1]  "patch" or "delete"
-- ARGV[2]  "1" when a condition is given, "0" otherwise
-- ARGV[3]  the condition's field name, as a JSON string
-- ARGV[4]  the condition's value, as JSON
-- ARGV[5…] for a patch, pairs: field name as a JSON string, value as JSON
--
-- Field names travel as JSON strings and are decoded here, so that they compare with the stored
-- ones exactly as encoding/json will read them back.
--
-- Each write publishes the document's new state on the key's watch channel ('watch:' and the
-- Redis key; see watch.go): the new document's text, or an empty message for a deletion. It is
-- sent with pcall, so that a server refusing the channel (an ACL) refuses the notification, not
-- the write.
--
-- Returns "ok", "notfound", "notjson", "missing" (the condition's field is absent) or
-- "mismatch" (present with another value).
--
-- The document is never decoded and re-encoded as a whole: cjson would print numbers with 14
-- significant digits and turn an empty array into {}. The script scans the stored text instead,
-- keeps every member it does not patch byte for byte, and splices in the values encoded by Go.
-- Values are compared as JSON values: numbers as doubles (1 == 1.0), strings decoded, arrays and
-- objects member by member, so key order and spacing do not matter.

local NULL = {}
local s

local function skip(i)
  return string.find(s, '[^ \t\r\n]', i) or (#s + 1)
end

local function char(i)
  return string.sub(s, i, i)
end

local parse

local function parse_string(i)
  local j = i + 1
  while true do
    local e = string.find(s, '["\\]', j)
    if not e then error('unterminated string') end
    if char(e) == '\\' then
      j = e + 2
    else
      return cjson.decode(string.sub(s, i, e)), e + 1
    end
  end
end

local function parse_word(i, word, value)
  if string.sub(s, i, i + #word - 1) ~= word then error('bad literal') end
  return value, i + #word
end

-- Parses the value at i (not blank) and returns it and the index after it. Strings, numbers
-- and booleans come back as Lua values, null as NULL, arrays and objects as tables tagged with
-- t = "a" or "o", their elements or members in v and, for arrays, their count in n.
parse = function(i)
  local c = char(i)
  if c == '{' then
    local members = {}
    i = skip(i + 1)
    if char(i) == '}' then return { t = 'o', v = members }, i + 1 end
    while true do
      if char(i) ~= '"' then error('bad object') end
      local k
      k, i = parse_string(i)
      i = skip(i)
      if char(i) ~= ':' then error('bad object') end
      members[k], i = parse(skip(i + 1))
      i = skip(i)
      c = char(i)
      if c == '}' then return { t = 'o', v = members }, i + 1 end
      if c ~= ',' then error('bad object') end
      i = skip(i + 1)
    end
  elseif c == '[' then
    local elems, n = {}, 0
    i = skip(i + 1)
    if char(i) == ']' then return { t = 'a', v = elems, n = 0 }, i + 1 end
    while true do
      n = n + 1
      elems[n], i = parse(i)
      i = skip(i)
      c = char(i)
      if c == ']' then return { t = 'a', v = elems, n = n }, i + 1 end
      if c ~= ',' then error('bad array') end
      i = skip(i + 1)
    end
  elseif c == '"' then
    return parse_string(i)
  elseif c == 't' then
    return parse_word(i, 'true', true)
  elseif c == 'f' then
    return parse_word(i, 'false', false)
  elseif c == 'n' then
    return parse_word(i, 'null', NULL)
  end
  local e = string.find(s, '[^-+0-9.eE]', i) or (#s + 1)
  local n = tonumber(string.sub(s, i, e - 1))
  if e == i or not n then error('bad value') end
  return n, e
end

local function equal(a, b)
  if type(a) ~= type(b) then return false end
  if type(a) ~= 'table' or a == NULL or b == NULL then return a == b end
  if a.t ~= b.t then return false end
  if a.t == 'a' then
    if a.n ~= b.n then return false end
    for i = 1, a.n do
      if not equal(a.v[i], b.v[i]) then return false end
    end
    return true
  end
  for k, v in pairs(a.v) do
    local w = b.v[k]
    if w == nil or not equal(v, w) then return false end
  end
  for k in pairs(b.v) do
    if a.v[k] == nil then return false end
  end
  return true
end

-- Splits the stored document into its members: for each, the key, the text of the whole member
-- ("key": value) and the parsed value.
local function members(raw)
  s = raw
  local out = {}
  local i = skip(1)
  if char(i) ~= '{' then error('not an object') end
  i = skip(i + 1)
  if char(i) == '}' then
    if skip(i + 1) <= #s then error('trailing data') end
    return out
  end
  while true do
    local start = i
    if char(i) ~= '"' then error('bad object') end
    local k, v
    k, i = parse_string(i)
    i = skip(i)
    if char(i) ~= ':' then error('bad object') end
    v, i = parse(skip(i + 1))
    out[#out + 1] = { k = k, text = string.sub(s, start, i - 1), v = v }
    i = skip(i)
    local c = char(i)
    if c == '}' then
      if skip(i + 1) <= #s then error('trailing data') end
      return out
    end
    if c ~= ',' then error('bad object') end
    i = skip(i + 1)
  end
end

-- The fast path. A lease renewal patches every member of a flat document (no object or array
-- in it) on a condition that is a string: the members' texts are not needed then, and cjson,
-- which is C, decodes the stored document in a fraction of the time the scanner above takes.
-- It is taken only where both agree: a flat object without hexadecimal numbers, NaN or
-- infinities (which cjson accepts and the scanner refuses), a condition value that is not an
-- object or an array, and a delete or a patch naming every member. Anything else goes the
-- scanner's way, as before.
local function fast_path(raw)
  if string.find(raw, '0[xX]') or not string.find(raw, '^[ \t\r\n]*{') then return nil end
  local ok, d = pcall(cjson.decode, raw)
  if not ok or type(d) ~= 'table' then return nil end
  for _, v in pairs(d) do
    local t = type(v)
    if t == 'table' or (t == 'number' and (v ~= v or v == math.huge or v == -math.huge)) then return nil end
  end
  local want
  if ARGV[2] == '1' then
    want = cjson.decode(ARGV[4])
    if type(want) == 'table' then return nil end
  end
  local patch, order = {}, {}
  if ARGV[1] ~= 'delete' then
    for i = 5, #ARGV, 2 do
      local k = cjson.decode(ARGV[i])
      if patch[k] == nil then order[#order + 1] = k end
      patch[k] = ARGV[i] .. ':' .. ARGV[i + 1]
    end
    for k in pairs(d) do
      if patch[k] == nil then return nil end
    end
  end
  return { doc = d, want = want, patch = patch, order = order }
end

local raw = redis.call('GET', KEYS[1])
if not raw then return 'notfound' end
local channel = 'watch:' .. KEYS[1]

local f = fast_path(raw)
if f then
  if ARGV[2] == '1' then
    local got = f.doc[cjson.decode(ARGV[3])]
    if got == nil then return 'missing' end
    if got ~= f.want then return 'mismatch' end
  end
  if ARGV[1] == 'delete' then
    redis.call('DEL', KEYS[1])
    redis.pcall('PUBLISH', channel, '')
    return 'ok'
  end
  local parts = {}
  for i, k in ipairs(f.order) do parts[i] = f.patch[k] end
  local new = '{' .. table.concat(parts, ',') .. '}'
  redis.call('SET', KEYS[1], new, 'KEEPTTL')
  redis.pcall('PUBLISH', channel, new)
  return 'ok'
end

local ok, doc = pcall(members, raw)
if not ok then return 'notjson' end

if ARGV[2] == '1' then
  local field = cjson.decode(ARGV[3])
  s = ARGV[4]
  local want = parse(skip(1))
  local found = false
  -- The last occurrence of a duplicated key wins, as in encoding/json.
  local got
  for _, m in ipairs(doc) do
    if m.k == field then found, got = true, m.v end
  end
  if not found then return 'missing' end
  if not equal(got, want) then return 'mismatch' end
end

if ARGV[1] == 'delete' then
  redis.call('DEL', KEYS[1])
  redis.pcall('PUBLISH', channel, '')
  return 'ok'
end

local patch, order = {}, {}
for i = 5, #ARGV, 2 do
  local k = cjson.decode(ARGV[i])
  if patch[k] == nil then order[#order + 1] = k end
  patch[k] = ARGV[i] .. ':' .. ARGV[i + 1]
end
local parts, done = {}, {}
for _, m in ipairs(doc) do
  local p = patch[m.k]
  if p == nil then
    parts[#parts + 1] = m.text
  elseif not done[m.k] then
    parts[#parts + 1] = p
    done[m.k] = true
  end
end
for _, k in ipairs(order) do
  if not done[k] then parts[#parts + 1] = patch[k] end
end
local new = '{' .. table.concat(parts, ',') .. '}'
redis.call('SET', KEYS[1], new, 'KEEPTTL')
redis.pcall('PUBLISH', channel, new)
return 'ok'
