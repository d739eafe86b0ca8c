"""Java's text forms of key values, as Hudi 0.14's key generators print them.

Hudi's default Spark datasource write (upsert/insert; bulk_insert with the row
writer off) converts each row to an Avro record and builds keys with
`KeyGenUtils.getRecordKey` / `getRecordPartitionPath`, i.e.
`HoodieAvroUtils.getNestedFieldValAsString`: the Avro value's Java `toString()`
after `convertValueForSpecificDataTypes`. Per Spark type that gives:

* decimal: Avro bytes/fixed decimal -> `BigDecimal` at the column's scale ->
  `BigDecimal.toString()`: plain unless the adjusted exponent is below -6 (or the
  scale negative), then scientific: `1E-18`, `1.00E-8`, `0E-18` (`java_decimal`);
* date: Avro int days -> `LocalDate.toString()`: `yyyy-MM-dd`, a sign and more
  digits outside years 0-9999 (`+10000-01-01`, `-0001-01-01`) (`java_local_date`);
* timestamp: Avro long micros -> `Long.toString()` (no logical conversion unless
  `consistent.logical.timestamp.enabled`, which pyhudi does not support);
* float/double: `Float.toString` / `Double.toString` of the JVM (`1.0E10`,
  `1.0E-5`, `100.0`, `NaN`, `Infinity`). Spark's cast to string calls these very
  methods in the JVM that runs the write, so the Spark path matches Hudi running
  on the same Java version (JDK 19 changed the algorithm for rare values, e.g.
  `2.82879384806159E17`: 8-18 print `2.82879384806159008E17`). The Arrow path
  cannot reproduce the JVM's choice and declines these types;
* boolean, integers, strings: `true`/`false`, decimal digits, the string;
* binary: `ByteBuffer.toString()` (`java.nio.HeapByteBuffer[pos=0 lim=3 cap=3]`), not
  a usable key: refused.

Hudi's row-writer bulk_insert prints some types differently (Spark's
`Timestamp`/`LocalDate` objects); pyhudi follows the Avro path for every
operation, so that all writes of one table agree.
"""

from __future__ import annotations

# LocalDate.toString switches to a signed form outside these years.
_MIN_PLAIN_YEAR, _MAX_PLAIN_YEAR = 0, 9999


def java_decimal(unscaled: int, scale: int) -> str:
    """`new BigDecimal(BigInteger.valueOf(unscaled), scale).toString()`."""
    digits = str(abs(unscaled))
    sign = "-" if unscaled < 0 else ""
    adjusted = len(digits) - 1 - scale
    if scale >= 0 and adjusted >= -6:
        if scale == 0:
            return sign + digits
        digits = digits.rjust(scale + 1, "0")
        return f"{sign}{digits[:-scale]}.{digits[-scale:]}"
    mantissa = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
    return f"{sign}{mantissa}E{'+' if adjusted > 0 else ''}{adjusted}"


def civil_from_days(days: int) -> tuple[int, int, int]:
    """Proleptic Gregorian (year, month, day) of a day count since 1970-01-01 (any year, as LocalDate)."""
    z = days + 719468
    era = z // 146097  # floor division (the C original truncates, hence its adjustment)
    doe = z - era * 146097
    yoe = (doe - doe // 1460 + doe // 36524 - doe // 146096) // 365
    doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
    mp = (5 * doy + 2) // 153
    day = doy - (153 * mp + 2) // 5 + 1
    month = mp + 3 if mp < 10 else mp - 9
    return yoe + era * 400 + (month <= 2), month, day


def java_local_date(days: int) -> str:
    """`LocalDate.ofEpochDay(days).toString()`."""
    year, month, day = civil_from_days(days)
    if abs(year) < 1000:
        text = ("-" if year < 0 else "") + f"{abs(year):04d}"
    else:
        text = ("+" if year > _MAX_PLAIN_YEAR else "") + str(year)
    return f"{text}-{month:02d}-{day:02d}"


def plain_date_days() -> tuple[int, int]:
    """Day numbers of 0000-01-01 and 9999-12-31: between them `yyyy-MM-dd` is LocalDate's form."""
    return -719528, 2932896


def java_double(value: float | None, single: bool = False) -> str | None:
    """`Double.toString` (or `Float.toString` with `single`) as JDK 19+ prints it: the shortest digits
    that round-trip, plain for 1e-3 <= |v| < 1e7 (`100.0`, `0.001`), else `d.dddE<n>` (`1.0E10`,
    `1.0E-5`); `NaN`, `Infinity`, `-0.0`. Older JDKs print a longer form for rare values (see above)."""
    import math

    import numpy as np

    if value is None:
        return None
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    if value == 0:
        return "-0.0" if math.copysign(1.0, value) < 0 else "0.0"
    number = np.float32(value) if single else np.float64(value)
    mantissa, exp_text = np.format_float_scientific(number, unique=True, trim="-").split("e")
    exponent = int(exp_text)
    sign = "-" if mantissa.startswith("-") else ""
    digits = mantissa.lstrip("-").replace(".", "").rstrip("0") or "0"
    if 1e-3 <= abs(float(number)) < 1e7:
        point = exponent + 1
        if point <= 0:
            return f"{sign}0.{'0' * -point}{digits}"
        if point >= len(digits):
            return f"{sign}{digits}{'0' * (point - len(digits))}.0"
        return f"{sign}{digits[:point]}.{digits[point:]}"
    return f"{sign}{digits[0]}.{digits[1:] or '0'}E{exponent}"
