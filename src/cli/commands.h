// Every subcommand's entry point: argv holds the arguments after the command name. Each returns
// an exit code or throws plexus::Error (mapped to its exit code by main).
#pragma once

namespace plexus::cli {

int cmd_version(int argc, char** argv);
int cmd_estimate(int argc, char** argv);
int cmd_plan(int argc, char** argv);
int cmd_calibrate(int argc, char** argv);
int cmd_make_model(int argc, char** argv);
int cmd_generate(int argc, char** argv);
int cmd_perplexity(int argc, char** argv);
int cmd_tokenize(int argc, char** argv);
int cmd_chat_template(int argc, char** argv);
int cmd_detect(int argc, char** argv);
int cmd_doctor(int argc, char** argv);
int cmd_monitor(int argc, char** argv);
int cmd_bench(int argc, char** argv);  // and `bench compare`
int cmd_batch(int argc, char** argv);
int cmd_quantize(int argc, char** argv);
int cmd_serve(int argc, char** argv);
int cmd_deploy(int argc, char** argv);
int cmd_train(int argc, char** argv);

}  // namespace plexus::cli
