// Axis-aligned box arithmetic of Caffe2's detection ops (GenerateProposals,
// BBoxTransform, BoxWithNMSLimit; Detectron's lib/utils/boxes.py): boxes
// are (x1, y1, x2, y2) in pixels. Caffe2's legacy_plus_one (default on, as
// Detectron) counts a box's width as x2 - x1 + 1; off, as x2 - x1
// (torchvision's convention).
//
// Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <vector>

namespace doppio {
namespace boxes {

struct Box {
  float x1, y1, x2, y2;
};

inline Box BoxAt(const float* p) { return {p[0], p[1], p[2], p[3]}; }

// The image a RoI's first column names: an integer in [0, images); else an
// error naming RoI `roi` and `images_of` (what holds the images, e.g. "X").
int64_t ImageIndex(double value, int64_t roi, int64_t images, const char* images_of);

// Detectron's cap on dw and dh: log(1000 / 16), so a box grows at most
// 62.5x.
float DefaultDeltaClip();

// The box `deltas` (dx, dy, dw, dh), each divided by its weight, move and
// scale `box` to. correct_transform_coords (Detectron's form) takes
// plus_one off the far corner.
Box ApplyDeltas(const Box& box, const float* deltas, const float weights[4], float clip,
                bool correct_transform_coords, float plus_one);

// The box clipped into an image of `height` x `width` pixels:
// x in [0, width - plus_one], y in [0, height - plus_one].
Box ClipToImage(const Box& box, float height, float width, float plus_one);

float Area(const Box& box, float plus_one);
float Iou(const Box& a, const Box& b, float plus_one);

// `indices` sorted by descending score, NaN last; equal scores keep their
// order (Caffe2's sort is not stable, so its ties are unspecified).
std::vector<int64_t> ByDescendingScore(const float* scores, const std::vector<int64_t>& indices);

// Greedy non-maximum suppression over `order` (indices into the [n, 4]
// `boxes` rows `stride` floats apart, best first): keeps a box unless its
// IoU with a kept one exceeds `threshold`; at most top_n (< 0: all).
// `rotated`: the rows are 5-float rotated boxes (rotated_box_utils.h).
std::vector<int64_t> Nms(const float* boxes, int64_t stride, const std::vector<int64_t>& order,
                         float threshold, int64_t top_n, float plus_one, bool rotated = false);

// Soft-NMS (Bodla et al.; Detectron's cython_nms): repeatedly keeps the
// best pending box and decays the others' `scores` by their IoU with it
// (method 1 linear: 1 - IoU above `threshold`; 2 gaussian: exp(-IoU^2 /
// sigma); 0: hard NMS), dropping those under score_threshold. `scores` (one
// per box, `score_stride` floats apart) are updated in place.
std::vector<int64_t> SoftNms(const float* boxes, int64_t stride, float* scores,
                             int64_t score_stride, const std::vector<int64_t>& indices, float sigma,
                             float threshold, float score_threshold, int method, int64_t top_n,
                             float plus_one, bool rotated = false);

}  // namespace boxes
}  // namespace doppio
