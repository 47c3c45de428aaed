-- KEYS[1] the key
--@include first
return first()
