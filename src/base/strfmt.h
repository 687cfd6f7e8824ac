// printf-style formatting into std::string (GCC 12 has no <format>).
#pragma once

#include <cstdarg>
#include <cstdio>
#include <string>

namespace braid {

[[gnu::format(printf, 1, 2)]] std::string strfmt(const char* fmt, ...);
std::string vstrfmt(const char* fmt, va_list ap);

}  // namespace braid
