// `calibrate --kineto TRACE.json SCENARIO --out P.yaml`: a profile fitted to a PyTorch profiler
// trace of the user's own run. Three global parameters, one per kernel class the trace's names
// sort into (validate/kineto.h): the rate of GEMMs, of attention and of memory-bound kernels as a
// multiple of the base profile's (cost::ComputeEfficiency::RateScale). They are what a profile
// measured on another machine of the same GPU cannot know: clocks under the user's power cap,
// cuBLAS and attention library versions, the framework's own elementwise kernels.
//
// Fit: the simulated step's kernel time of class c on graph rank 0 is G_c + W_c / f_c, with G_c
// its kernels' launch gaps (count x the profile's launch_gap, which the scale leaves alone) and
// W_c the rest; f_c is chosen so that it equals the trace's time of class c per step, M_c:
// f_c <- f_c x (P_c - G_c) / (M_c - G_c), P_c the prediction with the current f_c. Exact in one
// pass when nothing overlaps; a few passes settle what overlap and interference with
// communication add (stopping within 0.5%, at most 6 passes). Communication is not fitted: an
// NCCL kernel's time in a trace includes waiting for the slowest peer, so it does not measure the
// collective's cost (`calibrate --nccl-tests` fits that from nccl-tests logs).
#pragma once

#include <string>
#include <vector>

#include "cost_models/profile.h"
#include "scenarios/scenario.h"
#include "validate/kineto.h"

namespace cs::validate {

struct KinetoFit {
  cost::Profile profile;        // the base profile with rate_scale fitted
  StepBreakdown measured;       // the trace, per step
  StepBreakdown before, after;  // the prediction with the base profile, and with the fitted one
  int passes = 0;
  std::vector<std::string> notes;  // classes left at 1, and why
};

// `s` carries the base profile (its GPU's shipped one or --profile). Throws UserError when there
// is none, when a class's correction falls outside [kMinRateScale, kMaxRateScale] (the trace is
// of another run than the scenario describes), or when the trace has no kernels on `device`.
KinetoFit fit_kineto_profile(const KinetoTrace& trace, int device, const scenario::Scenario& s);

}  // namespace cs::validate
