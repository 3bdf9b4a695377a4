// The real JsonCpp, as rwkv_lightning_cuda uses it (test helper, built by tests/conformance/test_jsoncpp_real.py).
//
// Alic-Li/rwkv_lightning_cuda src/miss/adapter.cpp, load_package: the manifest is read with a default
// Json::CharReaderBuilder through Json::parseFromStream; content_version hashes json(m), which is
// Json::writeString of a Json::StreamWriterBuilder whose only setting is indentation = "".
//
// Reads one JSON text per line on stdin and answers one line per text:
//   "W <text>"     the value written back as json() writes it (mode "write", the default), or
//   "T <facts>"    (mode "types") for the root value: its type, isNumeric(), isIntegral(), asInt(), asFloat()
//                  (printed with %.9g, "!" where JsonCpp throws) and whether that float is finite;
//   "E <message>"  when the reader refuses the text or throws (newlines of the message turned into spaces).
#include <json/json.h>

#include <cmath>
#include <cstdio>
#include <iostream>
#include <sstream>
#include <string>

namespace {

const char *type_name(Json::ValueType t) {
  switch (t) {
  case Json::nullValue: return "null";
  case Json::intValue: return "int";
  case Json::uintValue: return "uint";
  case Json::realValue: return "real";
  case Json::stringValue: return "string";
  case Json::booleanValue: return "bool";
  case Json::arrayValue: return "array";
  case Json::objectValue: return "object";
  }
  return "?";
}

std::string facts(const Json::Value &v) {
  std::ostringstream out;
  out << type_name(v.type()) << ' ' << v.isNumeric() << ' ' << v.isIntegral() << ' ';
  try {
    out << v.asInt();
  } catch (const std::exception &) {
    out << '!';
  }
  out << ' ';
  try {
    const float f = v.asFloat();
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.9g", static_cast<double>(f));
    out << buf << ' ' << std::isfinite(f);
  } catch (const std::exception &) {
    out << "! 0";
  }
  return out.str();
}

} // namespace

int main(int argc, char **argv) {
  const bool types = argc > 1 && std::string(argv[1]) == "types";
  Json::CharReaderBuilder reader;
  Json::StreamWriterBuilder writer;
  writer["indentation"] = "";
  std::string line;
  while (std::getline(std::cin, line)) {
    Json::Value value;
    std::string errors;
    std::istringstream in(line);
    bool read = false;
    try {  // a text nested past stackLimit throws (Json::RuntimeError) instead of returning false
      read = Json::parseFromStream(reader, in, &value, &errors);
    } catch (const std::exception &e) {
      errors = e.what();
    }
    if (!read) {
      for (auto &c : errors)
        if (c == '\n' || c == '\r')
          c = ' ';
      std::cout << "E " << errors << '\n';
      continue;
    }
    std::cout << (types ? "T " + facts(value) : "W " + Json::writeString(writer, value)) << '\n';
  }
  return 0;
}
