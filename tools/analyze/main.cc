// tools/analyze/main.cc: the gpscope-analyze executable.
#include "tools/analyze/cli.h"

int main(int argc, char** argv) { return gpscope::analyze::RunMain(argc, argv); }
