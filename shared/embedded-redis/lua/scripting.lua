--[[
  The Lua side of the embedded engine's scripting (src/scripting.ts runs this once per Lua
  state): the `redis` library over the engine's `__herald_raw_call`, a `cjson` with Redis's
  lua-cjson behaviour (escapes '/', `%.14g` numbers, empty tables as {}, sparse arrays refused),
  and Redis 7's protection of globals. Only what Redis offers scripts is left in the state.
]]
local raw_call = __herald_raw_call
__herald_raw_call = nil
io, os, package, require, module, loadfile, dofile, setfenv = nil, nil, nil, nil, nil, nil, nil, nil
print = function() end

redis = {
  LOG_DEBUG = 0, LOG_VERBOSE = 1, LOG_NOTICE = 2, LOG_WARNING = 3,
  REPL_NONE = 0, REPL_AOF = 1, REPL_SLAVE = 2, REPL_REPLICA = 2, REPL_ALL = 3,
}

function redis.call(...)
  local reply, failure = raw_call(...)
  if failure ~= nil then error(failure) end
  return reply
end

function redis.pcall(...)
  local reply, failure = raw_call(...)
  if failure ~= nil then return failure end
  return reply
end

function redis.error_reply(message) return { err = message } end
function redis.status_reply(message) return { ok = message } end
function redis.log() end
function redis.replicate_commands() return true end
function redis.set_repl() end
function redis.setresp(version)
  if version ~= 2 then error('the embedded engine speaks RESP2 only') end
end

cjson = { null = newproxy(false) }

local escapes = {
  ['"'] = '\\"', ['\\'] = '\\\\', ['/'] = '\\/', ['\b'] = '\\b', ['\f'] = '\\f',
  ['\n'] = '\\n', ['\r'] = '\\r', ['\t'] = '\\t',
}
local function escape(char)
  return escapes[char] or string.format('\\u%04x', string.byte(char))
end

local MAX_DEPTH = 1000
local encode_value

local function encode_table(value, depth, out)
  if depth > MAX_DEPTH then error('Cannot serialise, excessive nesting (' .. depth .. ')', 0) end
  local count, max, array = 0, 0, true
  for key in pairs(value) do
    count = count + 1
    if array and type(key) == 'number' and key > 0 and math.floor(key) == key then
      if key > max then max = key end
    else
      array = false
    end
  end
  if array and count > 0 then
    if max > 10 and max > count * 2 then error('Cannot serialise table: excessively sparse array', 0) end
    out[#out + 1] = '['
    for index = 1, max do
      if index > 1 then out[#out + 1] = ',' end
      local item = value[index]
      if item == nil then out[#out + 1] = 'null' else encode_value(item, depth + 1, out) end
    end
    out[#out + 1] = ']'
    return
  end
  out[#out + 1] = '{'
  local first = true
  for key, item in pairs(value) do
    local name
    if type(key) == 'string' then name = key
    elseif type(key) == 'number' then name = string.format('%.14g', key)
    else error('Cannot serialise ' .. type(key) .. ': table key must be a number or string', 0) end
    if not first then out[#out + 1] = ',' end
    first = false
    out[#out + 1] = '"' .. string.gsub(name, '[%c"\\/]', escape) .. '":'
    encode_value(item, depth + 1, out)
  end
  out[#out + 1] = '}'
end

encode_value = function(value, depth, out)
  local kind = type(value)
  if kind == 'string' then
    out[#out + 1] = '"' .. string.gsub(value, '[%c"\\/]', escape) .. '"'
  elseif kind == 'number' then
    if value ~= value or value == math.huge or value == -math.huge then
      error('Cannot serialise number: must not be NaN or Inf', 0)
    end
    out[#out + 1] = string.format('%.14g', value)
  elseif kind == 'boolean' then
    out[#out + 1] = value and 'true' or 'false'
  elseif kind == 'nil' or value == cjson.null then
    out[#out + 1] = 'null'
  elseif kind == 'table' then
    encode_table(value, depth, out)
  else
    error('Cannot serialise ' .. kind .. ': type not supported', 0)
  end
end

-- Errors point at the script's line that called cjson, as lua-cjson's (a C function's) do;
-- not where the script tail-calls it (`return cjson.encode(x)`): Lua keeps no frame to name.
function cjson.encode(value)
  local out = {}
  local ok, failure = pcall(encode_value, value, 1, out)
  if not ok then error(failure, 2) end
  return table.concat(out)
end

local decode_value
local function decode_error(text, at, what)
  local found = at > #text and 'T_END' or 'invalid token'
  error('Expected ' .. what .. ' but found ' .. found .. ' at character ' .. at, 0)
end

local function skip(text, at)
  return string.find(text, '[^ \t\r\n]', at) or #text + 1
end

local function utf8_of(code)
  if code < 0x80 then return string.char(code) end
  if code < 0x800 then return string.char(0xC0 + math.floor(code / 0x40), 0x80 + code % 0x40) end
  if code < 0x10000 then
    return string.char(0xE0 + math.floor(code / 0x1000), 0x80 + math.floor(code / 0x40) % 0x40, 0x80 + code % 0x40)
  end
  return string.char(0xF0 + math.floor(code / 0x40000), 0x80 + math.floor(code / 0x1000) % 0x40,
    0x80 + math.floor(code / 0x40) % 0x40, 0x80 + code % 0x40)
end

local unescapes = { b = '\b', f = '\f', n = '\n', r = '\r', t = '\t', ['"'] = '"', ['\\'] = '\\', ['/'] = '/' }

local function decode_string(text, at)
  local parts, position = {}, at + 1
  while true do
    local stop = string.find(text, '["\\]', position)
    if not stop then decode_error(text, at, 'string end') end
    parts[#parts + 1] = string.sub(text, position, stop - 1)
    if string.sub(text, stop, stop) == '"' then return table.concat(parts), stop + 1 end
    local kind = string.sub(text, stop + 1, stop + 1)
    if kind == 'u' then
      local code = tonumber(string.sub(text, stop + 2, stop + 5), 16)
      if not code then decode_error(text, stop, 'unicode escape') end
      position = stop + 6
      if code >= 0xD800 and code <= 0xDBFF and string.sub(text, position, position + 1) == '\\u' then
        local low = tonumber(string.sub(text, position + 2, position + 5), 16)
        if low and low >= 0xDC00 and low <= 0xDFFF then
          code = 0x10000 + (code - 0xD800) * 0x400 + (low - 0xDC00)
          position = position + 6
        end
      end
      parts[#parts + 1] = utf8_of(code)
    else
      local char = unescapes[kind]
      if not char then decode_error(text, stop, 'escape') end
      parts[#parts + 1] = char
      position = stop + 2
    end
  end
end

decode_value = function(text, at, depth)
  if depth > MAX_DEPTH then error('Found too many nested data structures (' .. depth .. ') at character ' .. at, 0) end
  at = skip(text, at)
  local char = string.sub(text, at, at)
  if char == '{' then
    local result = {}
    at = skip(text, at + 1)
    if string.sub(text, at, at) == '}' then return result, at + 1 end
    while true do
      if string.sub(text, at, at) ~= '"' then decode_error(text, at, 'object key string') end
      local key
      key, at = decode_string(text, at)
      at = skip(text, at)
      if string.sub(text, at, at) ~= ':' then decode_error(text, at, 'colon') end
      result[key], at = decode_value(text, at + 1, depth + 1)
      at = skip(text, at)
      local separator = string.sub(text, at, at)
      if separator == '}' then return result, at + 1 end
      if separator ~= ',' then decode_error(text, at, 'comma or object end') end
      at = skip(text, at + 1)
    end
  elseif char == '[' then
    local result, index = {}, 0
    at = skip(text, at + 1)
    if string.sub(text, at, at) == ']' then return result, at + 1 end
    while true do
      index = index + 1
      result[index], at = decode_value(text, at, depth + 1)
      at = skip(text, at)
      local separator = string.sub(text, at, at)
      if separator == ']' then return result, at + 1 end
      if separator ~= ',' then decode_error(text, at, 'comma or array end') end
      at = at + 1
    end
  elseif char == '"' then
    return decode_string(text, at)
  elseif string.sub(text, at, at + 3) == 'true' then
    return true, at + 4
  elseif string.sub(text, at, at + 4) == 'false' then
    return false, at + 5
  elseif string.sub(text, at, at + 3) == 'null' then
    return cjson.null, at + 4
  end
  local number = string.match(text, '^-?%d+%.?%d*[eE]?[-+]?%d*', at)
  if number and tonumber(number) then return tonumber(number), at + #number end
  decode_error(text, at, 'value')
end

local function decode_all(text)
  local value, at = decode_value(text, 1, 1)
  at = skip(text, at)
  if at <= #text then decode_error(text, at, 'the end') end
  return value
end

function cjson.decode(text)
  if type(text) ~= 'string' then error('bad argument #1 to \'decode\' (string expected)', 2) end
  local ok, result = pcall(decode_all, text)
  if not ok then error(result, 2) end
  return result
end

-- Redis 7: a script may neither create globals nor read undefined ones.
setmetatable(_G, {
  __newindex = function()
    error('Attempt to modify a readonly table', 2)
  end,
  __index = function(_, name)
    error('Script attempted to access nonexistent global variable \'' .. tostring(name) .. '\'', 2)
  end,
})
