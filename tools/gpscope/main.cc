#include "tools/gpscope/cli.h"

int main(int argc, char** argv) { return gpscope::launcher::RunMain(argc, argv); }
