// libFuzzer target for the deploy generators: random strings as the model directory's name and
// path, --image, --env names and values and the inventory's GPU names, for every target and api
// type. Each deployment is refused with InputError (only for what the files cannot carry: bytes
// that are not UTF-8, NUL, a ':' in a docker/compose mount, an --image that is no reference, a bad
// --env name) or its files are compared with the same deployment of placeholder strings:
//   - every file is printable UTF-8 (no raw control but '\n', no C1, DEL, U+2028, U+2029);
//   - YAML (yaml-cpp): the same tree, each scalar the placeholder's with the string put in exactly
//     (compose's "$$" read as "$"), a plain scalar that took a string never one YAML 1.1 reads as a
//     bool, null or number;
//   - run.sh, *.sbatch (shell_words.h): the same tokens, each word the placeholder's with the string
//     put in, and no unquoted character a shell would act on beyond the placeholder script's;
//   - Dockerfile: the same instruction lines, ENTRYPOINT/CMD read as JSON with the string put in.
// Input: fields separated by NUL: selector, model name, model parent path, image, env name, env
// value, second env value, GPU name.
#include <yaml-cpp/yaml.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/json.h"
#include "deploy/deploy_spec.h"
#include "deploy/deployment.h"
#include "deploy/model_facts.h"
#include "fuzz_util.h"
#include "shell_words.h"
#include "tokenizer/utf8.h"

namespace {

using namespace plexus::deploy;
using plexus::fuzz::ShellToken;

[[noreturn]] void finding(const std::string& file, const std::string& what) {
  std::fprintf(stderr, "deploy_files_fuzz: %s: %s\n", file.c_str(), what.c_str());
  std::abort();
}

// Placeholder -> the string it stands for; put_in replaces every placeholder in one pass.
using Strings = std::vector<std::pair<std::string, std::string>>;

std::string put_in(const std::string& text, const Strings& strings) {
  std::string out;
  for (std::size_t i = 0; i < text.size();) {
    bool hit = false;
    for (const auto& [placeholder, value] : strings) {
      if (text.compare(i, placeholder.size(), placeholder) == 0) {
        out += value;
        i += placeholder.size();
        hit = true;
        break;
      }
    }
    if (!hit) out += text[i++];
  }
  return out;
}

// The first raw character a generated file must not hold, or "".
std::string unprintable(const std::string& text) {
  for (std::size_t i = 0; i < text.size(); ++i) {
    const auto b = static_cast<unsigned char>(text[i]);
    const auto b1 = i + 1 < text.size() ? static_cast<unsigned char>(text[i + 1]) : 0;
    const auto b2 = i + 2 < text.size() ? static_cast<unsigned char>(text[i + 2]) : 0;
    if ((b < 0x20 && b != '\n') || b == 0x7F) return "control byte " + std::to_string(b) + " at " + std::to_string(i);
    if (b == 0xC2 && b1 >= 0x80 && b1 <= 0x9F) return "a C1 control at " + std::to_string(i);
    if (b == 0xE2 && b1 == 0x80 && (b2 == 0xA8 || b2 == 0xA9)) return "U+2028/U+2029 at " + std::to_string(i);
  }
  return "";
}

// Whether YAML 1.1 (docker-compose's PyYAML) would read a plain scalar as something else than a string.
bool yaml11_special(const std::string& s) {
  if (s.empty()) return true;
  std::string lower;
  for (char c : s) lower += static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
  for (const char* w : {"y", "n", "yes", "no", "true", "false", "on", "off", "null", "~", "<<", "="}) {
    if (lower == w) return true;
  }
  const std::size_t d = (s[0] == '-' || s[0] == '+') ? 1 : 0;
  const char c = d < s.size() ? s[d] : ' ';
  return (c >= '0' && c <= '9') || (c == '.' && d + 1 < s.size() && ((s[d + 1] >= '0' && s[d + 1] <= '9') || s[d + 1] == 'i' ||
                                                                     s[d + 1] == 'n' || s[d + 1] == 'I' || s[d + 1] == 'N'));
}

std::string undollar(const std::string& s) {
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    out += s[i];
    if (s[i] == '$' && i + 1 < s.size() && s[i + 1] == '$') ++i;
  }
  return out;
}

void compare_yaml(const std::string& file, const YAML::Node& got, const YAML::Node& want, const Strings& strings, bool compose) {
  if (got.Type() != want.Type()) finding(file, "a YAML node changed type");
  if (want.IsMap()) {
    if (got.size() != want.size()) finding(file, "a YAML map changed its number of keys");
    auto g = got.begin();
    for (auto w = want.begin(); w != want.end(); ++w, ++g) {
      compare_yaml(file, g->first, w->first, strings, compose);
      compare_yaml(file, g->second, w->second, strings, compose);
    }
  } else if (want.IsSequence()) {
    if (got.size() != want.size()) finding(file, "a YAML sequence changed its length");
    for (std::size_t i = 0; i < want.size(); ++i) compare_yaml(file, got[i], want[i], strings, compose);
  } else if (want.IsScalar()) {
    const std::string w = put_in(want.Scalar(), strings);
    const std::string g = compose ? undollar(got.Scalar()) : got.Scalar();
    if (g != w) finding(file, "a YAML scalar reads back as '" + got.Scalar() + "', not '" + w + "'");
    if (got.Tag() == "?" && got.Scalar() != want.Scalar() && yaml11_special(got.Scalar())) {
      finding(file, "the plain scalar '" + got.Scalar() + "' is not a string to YAML 1.1");
    }
  }
}

void compare_shell(const std::string& file, const std::string& got_text, const std::string& want_text, const Strings& strings) {
  std::string error;
  const auto got = plexus::fuzz::shell_tokens(got_text, &error);
  if (!got) finding(file, "the script does not read as shell: " + error);
  const auto want = plexus::fuzz::shell_tokens(want_text, &error);
  if (!want) finding(file, "the placeholder script does not read as shell: " + error);
  if (got->size() != want->size()) finding(file, "the script has " + std::to_string(got->size()) + " tokens, not " + std::to_string(want->size()));
  const auto acts = [](const std::string& unquoted) {  // characters a shell acts on when unquoted
    std::string out;
    for (char c : unquoted) {
      const bool inert = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                         std::string_view("_./:=,@%+-").find(c) != std::string_view::npos;
      if (!inert) out += c;
    }
    return out;
  };
  for (std::size_t i = 0; i < got->size(); ++i) {
    const ShellToken& g = (*got)[i];
    ShellToken w = (*want)[i];
    if (g.kind != w.kind) finding(file, "token " + std::to_string(i) + " changed kind");
    if (g.kind != ShellToken::Kind::kWord) {
      if (g.text != w.text) finding(file, "operator " + std::to_string(i) + " changed");
      continue;
    }
    if (g.parts.size() != w.parts.size()) finding(file, "word '" + g.text + "' has other expansions than '" + w.text + "'");
    for (std::size_t k = 0; k < g.parts.size(); ++k) {
      const std::string expected = w.parts[k].first ? w.parts[k].second : put_in(w.parts[k].second, strings);
      if (g.parts[k].first != w.parts[k].first || g.parts[k].second != expected) {
        finding(file, "word '" + g.text + "' is not '" + put_in(w.text, strings) + "'");
      }
    }
    if (acts(g.unquoted) != acts(w.unquoted)) finding(file, "word '" + g.text + "' has unquoted characters a shell acts on");
  }
}

std::vector<std::string> dockerfile_lines(const std::string& text) {
  std::vector<std::string> lines;
  std::size_t start = 0;
  while (start < text.size()) {
    const std::size_t end = text.find('\n', start);
    const std::string line = text.substr(start, end == std::string::npos ? std::string::npos : end - start);
    if (line.empty() || line[0] != '#') lines.push_back(line);
    if (end == std::string::npos) break;
    start = end + 1;
  }
  return lines;
}

void compare_dockerfile(const std::string& file, const std::string& got_text, const std::string& want_text, const Strings& strings) {
  const std::vector<std::string> got = dockerfile_lines(got_text), want = dockerfile_lines(want_text);
  if (got.size() != want.size()) finding(file, "the Dockerfile has other instruction lines");
  for (std::size_t i = 0; i < got.size(); ++i) {
    const std::string k = want[i].rfind("ENTRYPOINT ", 0) == 0 ? "ENTRYPOINT " : want[i].rfind("CMD ", 0) == 0 ? "CMD " : "";
    if (k.empty()) {
      if (got[i] != want[i]) finding(file, "line '" + got[i] + "' is not '" + want[i] + "'");
      continue;
    }
    if (got[i].rfind(k, 0) != 0) finding(file, "line " + got[i] + " is not " + k);
    plexus::Json g, w;
    try {
      g = plexus::parse_json(got[i].substr(k.size()), file);
      w = plexus::parse_json(want[i].substr(k.size()), file);
    } catch (const plexus::InputError& e) {
      finding(file, std::string("an exec form is not JSON: ") + e.what());
    }
    if (!g.is_array() || g.size() != w.size()) finding(file, "the exec form changed length");
    for (std::size_t j = 0; j < w.size(); ++j) {
      if (g[j] != put_in(w[j].get<std::string>(), strings)) finding(file, "exec form word " + g[j].dump() + " changed");
    }
  }
}

std::vector<std::string> fields_of(const std::string& data) {
  std::vector<std::string> out;
  std::size_t start = 0;
  for (std::size_t at = data.find('\0'); at != std::string::npos; at = data.find('\0', start)) {
    out.push_back(data.substr(start, at - start));
    start = at + 1;
  }
  out.push_back(data.substr(start));
  out.resize(8);
  return out;
}

DeploySpec base_spec(Target target, ApiType api, int gpus) {
  DeploySpec s;
  s.target = target;
  s.api_type = api;
  s.image = default_image(api);
  constexpr std::int64_t kGiB = 1LL << 30;
  for (int i = 0; i < gpus; ++i) s.devices.gpus.push_back({i, "PLXGPU", 80 * kGiB, 79 * kGiB, std::string("9.0")});
  s.gpus_per_node = gpus;
  s.cpus = 8;
  if (gpus > 0) s.cuda_architectures = {"90"};
  s.plan.summary = "stages over GPUs 0,1 (2 layers), bfloat16, context 4096, 8 sequences";
  s.plan.tensor_parallel = api == ApiType::kPlexus ? 1 : std::max(1, gpus);
  s.plan.context = 4096;
  s.plan.max_sequences = 8;
  s.plan.gpu_bytes_needed = 3 * kGiB;
  s.plan.host_memory_bytes = 4 * kGiB;
  s.plan.model_bytes = kGiB;
  s.plan.shm_bytes = gpus > 1 ? 16 * kGiB : 2 * kGiB;
  s.plan.plexus_plan_args = {"--dtype", "bfloat16", "--context", "4096"};
  return s;
}

bool valid_utf8(const std::string& s) { return plexus::utf8::find_invalid(s) == std::string::npos; }

// Text every file can carry escaped: UTF-8 without NUL.
bool utf8_text(const std::string& s) { return s.find('\0') == std::string::npos && valid_utf8(s); }

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::vector<std::string> f = fields_of(plexus::fuzz::text_of(data, size));
  const unsigned sel0 = f[0].size() > 0 ? static_cast<unsigned char>(f[0][0]) : 0;
  const unsigned sel1 = f[0].size() > 1 ? static_cast<unsigned char>(f[0][1]) : 0;
  const Target target = static_cast<Target>(sel0 % 4);
  const ApiType api = static_cast<ApiType>((sel0 / 4) % 4);
  const int gpus = static_cast<int>((sel0 / 16) % 3);
  const bool own_image = sel1 & 1, own_key = sel1 & 2, two_env = sel1 & 4;

  DeploySpec spec = base_spec(target, api, gpus);
  std::vector<std::string> env_values = {f[5]};
  if (two_env) env_values.push_back(f[6]);
  bool must_accept = true;  // whether nothing the files cannot carry is in the strings
  try {
    set_model_names(spec, "/srv/" + f[2] + "/" + f[1]);
    if (own_image) spec.image = f[3];
    for (std::size_t i = 0; i < env_values.size(); ++i) {
      spec.env.push_back(parse_env_entry((own_key ? f[4] : "FUZZ_KEY") + (i ? "_2" : "") + "=" + env_values[i]));
    }
    for (SelectedGpu& g : spec.devices.gpus) g.name = f[7];
  } catch (const plexus::InputError&) {
    return 0;
  }
  for (const std::string& s : {spec.model_path, f[5], f[6], f[7]}) must_accept = must_accept && utf8_text(s);
  must_accept = must_accept && !own_image && !own_key;

  std::vector<GeneratedFile> files;
  try {
    files = generate_files(spec);
  } catch (const plexus::InputError& e) {
    if (must_accept) finding("generate_files", std::string("refused strings it can escape: ") + e.what());
    return 0;
  }

  // The same deployment with placeholders where the strings were.
  DeploySpec want = spec;
  const bool dash = !spec.model_name.empty() && spec.model_name[0] == '-';
  // Placeholders no app name ([a-z0-9-]), --env name ([A-Za-z0-9_]) or generator text holds (the
  // app name and --env names stay as they are in both deployments).
  const std::string name_placeholder = dash ? "-{PLX:NAME}" : "{PLX:NAME}";
  const std::string image_placeholder = "plx.placeholder/image";
  Strings strings = {{name_placeholder, spec.model_name}, {"{PLX:PATH}", spec.model_path}, {image_placeholder, spec.image}};
  want.model_name = name_placeholder;
  want.model_path = "{PLX:PATH}";
  want.model_mount = "/models/" + name_placeholder;
  want.image = image_placeholder;
  for (std::size_t i = 0; i < want.env.size(); ++i) {
    const std::string p = "{PLX:VAL" + std::string(1, static_cast<char>('A' + i)) + "}";
    strings.emplace_back(p, want.env[i].second);
    want.env[i].second = p;
  }
  const std::vector<GeneratedFile> expected = generate_files(want);
  if (files.size() != expected.size()) finding("generate_files", "other files than the placeholder deployment's");

  for (std::size_t i = 0; i < files.size(); ++i) {
    const std::string& path = files[i].path;
    if (path != expected[i].path) finding(path, "is not " + expected[i].path);
    if (const std::string bad = unprintable(files[i].content); !bad.empty()) finding(path, "holds " + bad);
    if (!valid_utf8(files[i].content)) finding(path, "is not UTF-8");
    const auto ends = [&](const char* tail) {
      return path.size() >= std::string(tail).size() && path.compare(path.size() - std::string(tail).size(), std::string::npos, tail) == 0;
    };
    if (ends(".yaml")) {
      YAML::Node got, w;
      try {
        got = YAML::Load(files[i].content);
      } catch (const YAML::Exception& e) {
        finding(path, std::string("yaml-cpp cannot read it: ") + e.what());
      }
      w = YAML::Load(expected[i].content);
      compare_yaml(path, got, w, strings, path == "compose.yaml");
    } else if (ends(".sh") || ends(".sbatch")) {
      compare_shell(path, files[i].content, expected[i].content, strings);
    } else if (path == "Dockerfile") {
      compare_dockerfile(path, files[i].content, expected[i].content, strings);
    } else if (files[i].content != expected[i].content) {
      finding(path, "differs from the placeholder deployment's");
    }
  }
  return 0;
}
