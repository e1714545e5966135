require "monitor"
require_relative "clock"

module Throttle
  # Token bucket: `capacity` tokens, refilled at `rate` per second.
  class RateLimiter
    include MonitorMixin

    attr_reader :capacity

    def initialize(capacity:, rate:, clock: Clock.new)
      super()
      @capacity = capacity
      @rate = rate
      @tokens = capacity.to_f
      @clock = clock
      @updated = clock.now
    end

    # Takes one token; false when the bucket is empty.
    def allow?
      synchronize do
        refill
        return false if @tokens < 1

        @tokens -= 1
        true
      end
    end

    def self.per_minute(count)
      new(capacity: count, rate: count / 60.0)
    end

    private

    def refill
      now = @clock.now
      @tokens = [@capacity, @tokens + (now - @updated) * @rate].min
      @updated = now
    end
  end

  def self.default
    @default ||= RateLimiter.per_minute(60)
  end
end
