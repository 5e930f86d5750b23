// CPU and virtual devices: budgets, copies, in-order queues, events across devices, concurrency.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <thread>
#include <vector>

#include "backend/cpu/cpu_device.h"
#include "backend/device_registry.h"
#include "core/error.h"

namespace plexus {

TEST(CpuDevice, AllocationsStayWithinTheBudget) {
  CpuDevice device(DeviceKind::kVirtual, 1, 1000, 1);
  EXPECT_EQ(device.name(), "virtual:1");
  EXPECT_EQ(device.memory_total(), 1000u);
  Buffer a = device.allocate(600);
  EXPECT_EQ(device.memory_free(), 400u);
  try {
    Buffer b = device.allocate(500);
    FAIL() << "allocation beyond the budget succeeded";
  } catch (const RuntimeError& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("virtual device 1"), std::string::npos) << message;
    EXPECT_NE(message.find("500 bytes"), std::string::npos) << message;
    EXPECT_NE(message.find("1000 B budget"), std::string::npos) << message;
    // Advice a run can follow: generate takes --max-memory, not --virtual-device-memory.
    EXPECT_NE(message.find("--max-memory \"1=SIZE\""), std::string::npos) << message;
    EXPECT_EQ(message.find("--virtual-device-memory"), std::string::npos) << message;
  }
  a.reset();
  EXPECT_EQ(device.memory_free(), 1000u);
  Buffer c = device.allocate(1000);  // the whole budget, once freed
  EXPECT_EQ(device.memory_free(), 0u);
  Buffer moved = std::move(c);
  EXPECT_EQ(moved.size(), 1000u);
  EXPECT_FALSE(c);
}

TEST(CpuDevice, CopiesBetweenHostAndDevices) {
  CpuDevice d0(DeviceKind::kVirtual, 0, 1 << 20, 1), d1(DeviceKind::kVirtual, 1, 1 << 20, 1);
  std::vector<float> host(17);
  for (int i = 0; i < 17; ++i) host[static_cast<std::size_t>(i)] = static_cast<float>(i) * 0.5f;
  Buffer a = d0.allocate(17 * sizeof(float)), b = d1.allocate(17 * sizeof(float));
  d0.copy_from_host(a, 0, host.data(), 17 * sizeof(float));
  d1.copy_from_device(b, 0, a, 0, 17 * sizeof(float));
  std::vector<float> back(17, -1.0f);
  d1.copy_to_host(back.data(), b, 0, 17 * sizeof(float));
  EXPECT_EQ(back, host);
  float one = 0;
  d1.copy_to_host(&one, b, 3 * sizeof(float), sizeof(float));
  EXPECT_EQ(one, 1.5f);
}

TEST(CpuDevice, QueueRunsInOrderAndEventsHandOffBetweenDevices) {
  DeviceRegistry registry = make_virtual_devices(2, 1 << 20);
  Device& d0 = registry.accelerator(0);
  Device& d1 = registry.accelerator(1);
  Buffer src = d0.allocate(sizeof(int) * 4), dst = d1.allocate(sizeof(int) * 4);
  std::vector<int> order;
  d0.enqueue([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));  // the consumer must wait for this
    for (int i = 0; i < 4; ++i) src.as<int>()[i] = 10 + i;
    order.push_back(0);
  });
  Event ready = d0.record_event();
  d1.wait_event(ready);
  enqueue_copy(dst, 0, src, 0, sizeof(int) * 4);  // runs on d1's queue after the wait
  d1.enqueue([&] { order.push_back(1); });
  d1.synchronize();
  EXPECT_TRUE(ready.query());
  EXPECT_EQ(order, (std::vector<int>{0, 1}));
  EXPECT_EQ(dst.as<int>()[3], 13);
}

TEST(CpuDevice, DevicesRunConcurrently) {
  DeviceRegistry registry = make_virtual_devices(2, 1 << 20);
  std::atomic<int> arrived{0};
  std::atomic<bool> both_seen[2] = {false, false};
  for (int d = 0; d < 2; ++d) {
    registry.accelerator(d).enqueue([&, d] {
      arrived.fetch_add(1);
      const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
      while (arrived.load() < 2 && std::chrono::steady_clock::now() < deadline) std::this_thread::yield();
      both_seen[d] = arrived.load() == 2;  // only true if the other device ran at the same time
    });
  }
  registry.synchronize_all();
  EXPECT_TRUE(both_seen[0].load());
  EXPECT_TRUE(both_seen[1].load());
}

TEST(CpuDevice, EachDeviceComputesWithItsOwnThreadPool) {
  DeviceRegistry registry = make_virtual_devices(2, 1 << 20);
  std::vector<long long> sums(2, 0);
  for (int d = 0; d < 2; ++d) {
    Device& device = registry.accelerator(d);
    ASSERT_NE(device.thread_pool(), nullptr);
    EXPECT_EQ(device.thread_pool()->size(), device.threads());
    device.enqueue([&, d] {
      std::atomic<long long> total{0};
      registry.accelerator(d).thread_pool()->parallel_for(1000, 1, [&](std::int64_t b, std::int64_t e) {
        long long s = 0;
        for (std::int64_t i = b; i < e; ++i) s += i;
        total += s;
      });
      sums[static_cast<std::size_t>(d)] = total.load();
    });
  }
  registry.synchronize_all();
  EXPECT_EQ(sums[0], 499500);
  EXPECT_EQ(sums[1], 499500);
  EXPECT_NE(registry.accelerator(0).thread_pool(), registry.accelerator(1).thread_pool());
}

TEST(CpuDevice, AFailedTaskSkipsLaterWorkAndSurfacesOnSynchronize) {
  CpuDevice device(DeviceKind::kVirtual, 0, 1 << 20, 1);
  bool later_ran = false;
  device.enqueue([] { throw RuntimeError("kernel failed on purpose"); });
  device.enqueue([&] { later_ran = true; });
  Event event = device.record_event();
  EXPECT_THROW(device.synchronize(), RuntimeError);
  EXPECT_FALSE(later_ran);
  EXPECT_TRUE(event.query());  // events complete even after a failure: nobody deadlocks
  device.enqueue([&] { later_ran = true; });
  device.synchronize();  // the error was reported once; the queue works again
  EXPECT_TRUE(later_ran);
}

TEST(DeviceRegistry, VirtualDevicesAreNumberedWithBudgetsAndThreads) {
  DeviceRegistry registry = make_virtual_devices_sharing(4, 4000);
  ASSERT_EQ(registry.accelerator_count(), 4);
  for (int i = 0; i < 4; ++i) {
    Device& d = registry.accelerator(i);
    EXPECT_EQ(d.ordinal(), i);
    EXPECT_EQ(d.kind(), DeviceKind::kVirtual);
    EXPECT_EQ(d.memory_total(), 1000u);
    EXPECT_GE(d.threads(), 1);
  }
  EXPECT_TRUE(registry.has_host());
  EXPECT_EQ(registry.host().name(), "cpu");
  EXPECT_EQ(registry.host().ordinal(), -1);
  EXPECT_THROW(registry.accelerator(4), InputError);
  EXPECT_THROW(make_virtual_devices(0, 1), InputError);
  EXPECT_STREQ(device_kind_name(DeviceKind::kCuda), "cuda");
}

}  // namespace plexus
