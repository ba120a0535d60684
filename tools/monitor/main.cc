// gpscope-monitor: the node monitor as its own executable (tools/monitor/monitor.h).
#include <iostream>
#include <string>
#include <vector>

#include "tools/monitor/monitor.h"

int main(int argc, char** argv) {
  return gpscope::monitor::RunMonitor(std::vector<std::string>(argv + 1, argv + argc), std::cout,
                                      std::cerr);
}
