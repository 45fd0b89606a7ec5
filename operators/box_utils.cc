#include "operators/box_utils.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/enforce.h"
#include "operators/rotated_box_utils.h"

namespace doppio {
namespace boxes {

int64_t ImageIndex(double value, int64_t roi, int64_t images, const char* images_of) {
  DOPPIO_ENFORCE(value >= 0 && value < static_cast<double>(images) && value == std::floor(value),
                 "RoI ", roi, " has batch index ", value, ", not one of the ", images,
                 " images of ", images_of);
  return static_cast<int64_t>(value);
}

float DefaultDeltaClip() { return std::log(1000.0f / 16.0f); }

Box ApplyDeltas(const Box& box, const float* deltas, const float weights[4], float clip,
                bool correct_transform_coords, float plus_one) {
  const float width = box.x2 - box.x1 + plus_one;
  const float height = box.y2 - box.y1 + plus_one;
  const float ctr_x = box.x1 + 0.5f * width;
  const float ctr_y = box.y1 + 0.5f * height;
  const float dx = deltas[0] / weights[0];
  const float dy = deltas[1] / weights[1];
  const float dw = std::min(deltas[2] / weights[2], clip);
  const float dh = std::min(deltas[3] / weights[3], clip);
  const float pred_x = dx * width + ctr_x;
  const float pred_y = dy * height + ctr_y;
  const float pred_w = std::exp(dw) * width;
  const float pred_h = std::exp(dh) * height;
  const float offset = correct_transform_coords ? plus_one : 0.f;
  return {pred_x - 0.5f * pred_w, pred_y - 0.5f * pred_h, pred_x + 0.5f * pred_w - offset,
          pred_y + 0.5f * pred_h - offset};
}

Box ClipToImage(const Box& box, float height, float width, float plus_one) {
  const auto clip = [](float v, float hi) { return std::max(std::min(v, hi), 0.f); };
  const float w = width - plus_one, h = height - plus_one;
  return {clip(box.x1, w), clip(box.y1, h), clip(box.x2, w), clip(box.y2, h)};
}

float Area(const Box& box, float plus_one) {
  return (box.x2 - box.x1 + plus_one) * (box.y2 - box.y1 + plus_one);
}

float Iou(const Box& a, const Box& b, float plus_one) {
  const float w = std::max(std::min(a.x2, b.x2) - std::max(a.x1, b.x1) + plus_one, 0.f);
  const float h = std::max(std::min(a.y2, b.y2) - std::max(a.y1, b.y1) + plus_one, 0.f);
  const float inter = w * h;
  return inter / (Area(a, plus_one) + Area(b, plus_one) - inter);
}

namespace {

// The IoU of the boxes at rows i and j (axis-aligned or rotated).
float RowIou(const float* boxes, int64_t stride, int64_t i, int64_t j, float plus_one,
             bool rotated) {
  if (rotated)
    return RotatedIou(RotatedBoxAt(boxes + i * stride), RotatedBoxAt(boxes + j * stride));
  return Iou(BoxAt(boxes + i * stride), BoxAt(boxes + j * stride), plus_one);
}

}  // namespace

std::vector<int64_t> ByDescendingScore(const float* scores, const std::vector<int64_t>& indices) {
  // NaN sorts last: compared as is it would break the sort's ordering.
  const auto key = [scores](int64_t i) {
    return std::isnan(scores[i]) ? -std::numeric_limits<float>::infinity() : scores[i];
  };
  std::vector<int64_t> order = indices;
  std::stable_sort(order.begin(), order.end(),
                   [&key](int64_t a, int64_t b) { return key(a) > key(b); });
  return order;
}

std::vector<int64_t> Nms(const float* boxes, int64_t stride, const std::vector<int64_t>& order,
                         float threshold, int64_t top_n, float plus_one, bool rotated) {
  std::vector<int64_t> keep;
  std::vector<bool> suppressed(order.size(), false);
  for (size_t i = 0; i < order.size(); ++i) {
    if (suppressed[i]) continue;
    if (top_n >= 0 && static_cast<int64_t>(keep.size()) >= top_n) break;
    keep.push_back(order[i]);
    for (size_t j = i + 1; j < order.size(); ++j) {
      if (suppressed[j]) continue;
      // A NaN IoU (degenerate boxes) fails Caffe2's "keep where IoU <=
      // threshold", so that box is dropped here too.
      const float iou = RowIou(boxes, stride, order[i], order[j], plus_one, rotated);
      if (!(iou <= threshold)) suppressed[j] = true;
    }
  }
  return keep;
}

std::vector<int64_t> SoftNms(const float* boxes, int64_t stride, float* scores,
                             int64_t score_stride, const std::vector<int64_t>& indices, float sigma,
                             float threshold, float score_threshold, int method, int64_t top_n,
                             float plus_one, bool rotated) {
  std::vector<int64_t> keep;
  std::vector<int64_t> pending = indices;
  const auto score = [&](int64_t i) -> float& { return scores[i * score_stride]; };
  while (!pending.empty()) {
    if (top_n >= 0 && static_cast<int64_t>(keep.size()) >= top_n) break;
    // The first best pending box (ties: the earliest).
    size_t best = 0;
    for (size_t j = 1; j < pending.size(); ++j) {
      if (score(pending[j]) > score(pending[best])) best = j;
    }
    const int64_t i = pending[best];
    keep.push_back(i);
    std::swap(pending[0], pending[best]);
    std::vector<int64_t> rest;
    for (size_t j = 1; j < pending.size(); ++j) {
      const int64_t k = pending[j];
      const float iou = RowIou(boxes, stride, i, k, plus_one, rotated);
      float weight = 1.f;
      if (method == 1) {
        weight = iou > threshold ? 1.f - iou : 1.f;
      } else if (method == 2) {
        weight = std::exp(-iou * iou / sigma);
      } else {
        weight = iou > threshold ? 0.f : 1.f;
      }
      score(k) *= weight;
      if (score(k) >= score_threshold) rest.push_back(k);
    }
    pending.swap(rest);
  }
  return keep;
}

}  // namespace boxes
}  // namespace doppio
