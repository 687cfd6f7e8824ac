// The layout probe compiled as C++: adds the mangled signature of every entry point and
// checks that the header is valid C++. One source keeps the C and C++ facts identical.
#include "layout_probe.c"
