// Goodput of a long run under failures that arrive at random (exponentially distributed, mean
// time between failures M), with a synchronous checkpoint every tau seconds of work that stalls
// training for delta seconds, and R seconds to come back after each failure (restart and
// restore). Daly 2006 ("A higher order estimate of the optimum checkpoint interval for restart
// dumps", Future Generation Computer Systems 22(3)) gives both the expected wall-clock time and
// the interval that minimises it; Young 1974 ("A first order approximation to the optimum
// checkpoint interval", CACM 17(9)) is the first term of Daly's interval.
#pragma once

namespace cs::training_run {

// Young 1974: tau = sqrt(2 delta M).
double young_interval(double delta_s, double mtbf_s);
// Daly 2006 (his higher-order optimum): tau = sqrt(2 delta M) [1 + sqrt(delta / 2M) / 3 + (delta /
// 2M) / 9] - delta for delta < 2M, else tau = M. It is within a fraction of a percent of the exact
// optimum of wall_clock_factor where Young's drifts as delta / M grows.
double daly_interval(double delta_s, double mtbf_s);
// Daly 2006 (his model of the expected run time): T_wall / T_solve = M e^(R/M) (e^((tau + delta)/M)
// - 1) / tau, the expected wall-clock time per second of work (rework after a failure, checkpoints
// and restarts included).
double wall_clock_factor(double interval_s, double delta_s, double restart_s, double mtbf_s);

}  // namespace cs::training_run
