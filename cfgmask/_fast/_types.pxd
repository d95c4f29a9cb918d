# Shared C typedefs for the cfgmask runtime.
from libc.stdint cimport int32_t, int64_t, uint8_t, uint32_t, uint64_t

# Lexer state 0 is the dead state; negative entries in a transition table mean
# "not computed yet".
cdef enum:
    LEX_DEAD = 0
    LEX_UNKNOWN = -1
