// Rotated box arithmetic of Caffe2's detection ops for rotated region
// proposals (RRPN: GenerateProposals with 5-column anchors, BBoxTransform and
// BoxWithNMSLimit with rotated=1): a box is (ctr_x, ctr_y, width, height,
// angle), the angle in degrees, counter-clockwise. Widths and heights are
// sizes, not corner differences, so legacy_plus_one matters only where an
// almost upright box is clipped through its corners.
//
// Pure functions; thread-safe.
#pragma once

namespace doppio {
namespace boxes {

struct RotatedBox {
  float cx, cy, w, h, angle;
};

inline RotatedBox RotatedBoxAt(const float* p) { return {p[0], p[1], p[2], p[3], p[4]}; }

// Where a moved box's angle is folded into [lo, hi] (its period hi - lo, a
// multiple of 180); off: left as it comes.
struct AngleBound {
  bool on = true;
  int lo = -90, hi = 90;
};

// The box `deltas` (dx, dy, dw, dh, da) move, scale and turn `box` to: dx, dy
// in widths and heights, dw, dh in log space (each divided by its weight, dw
// and dh capped at `clip`), da in radians (not weighted).
RotatedBox ApplyRotatedDeltas(const RotatedBox& box, const float* deltas, const float weights[4],
                              float clip, const AngleBound& bound);

// Boxes within `angle_thresh` degrees of upright are clipped into the image
// as upright boxes (through their corners); others are left alone, as in
// Caffe2 (a turned box has no single clipped form).
RotatedBox ClipRotatedToImage(const RotatedBox& box, float height, float width, float angle_thresh,
                              float plus_one);

// The area two rotated boxes share, and their IoU (intersection over the
// union of the areas width x height).
double RotatedIntersection(const RotatedBox& a, const RotatedBox& b);
float RotatedIou(const RotatedBox& a, const RotatedBox& b);

}  // namespace boxes
}  // namespace doppio
