"""Community pharmacy & clinic tools. Restricted Python: `db`, `clock` and `ToolError` are given, nothing is imported."""

OUR_PHARMACY = "PHM-000001"
OPEN_FILL_STATUSES = ["pending", "ready"]
PICKUP_HOLD_DAYS = 10
CANCEL_NOTICE_MINUTES = 120
MEMBER_ID_MIN = 6
MEMBER_ID_MAX = 12
# A severe allergy to the key class also rules out the value class (cross-sensitivity).
CROSS_SENSITIVE = {"penicillins": "cephalosporins"}


def verified_patient(patient_id):
    patient = db.get("patients", patient_id)
    db.ensure("identity_checks", {"patient_id": patient_id},
              "identity not verified: call verify_identity for this patient first")
    return patient


def owned_prescription(patient_id, prescription_id):
    rx = db.owned("prescriptions", prescription_id, "patient_id", patient_id)
    return rx


def owned_fill(patient_id, fill_id):
    fill = db.get("fills", fill_id)
    owned_prescription(patient_id, fill["prescription_id"])
    return fill


def owned_appointment(patient_id, appointment_id):
    appointment = db.owned("appointments", appointment_id, "patient_id", patient_id)
    return appointment


def medication_label(med):
    return f"{med['name']} {med['strength']} {med['form']}"


def earliest_refill_on(rx):
    # 75% of the days' supply must have elapsed since the last fill (rounded up to whole days).
    return clock.add_days(rx["last_filled_on"], (rx["days_supply"] * 3 + 3) // 4)


def open_fills_of(prescription_id):
    return [f for f in db.find("fills", {"prescription_id": prescription_id}) if f["status"] in OPEN_FILL_STATUSES]


def copay_for(patient, med, quantity):
    plan = db.get("insurance_plans", patient["plan_id"])
    cash_price = round(med["unit_price"] * quantity, 2)
    if plan["kind"] == "self_pay":
        return {"cash_price": cash_price, "copay": cash_price, "basis": "self-pay: full cash price"}
    if plan["status"] != "active":
        return {"cash_price": cash_price, "copay": cash_price,
                "basis": f"plan {plan['name']} is {plan['status']}: full cash price"}
    if med["tier"] >= 4:
        share = round(cash_price * plan["tier4_coinsurance_pct"] / 100, 2)
        copay = min(share, plan["specialty_copay_cap"])
        return {"cash_price": cash_price, "copay": round(copay, 2),
                "basis": f"tier 4: {plan['tier4_coinsurance_pct']:.0f}% coinsurance, capped at {plan['specialty_copay_cap']:.2f}"}
    flat = {1: plan["tier1_copay"], 2: plan["tier2_copay"], 3: plan["tier3_copay"]}[med["tier"]]
    return {"cash_price": cash_price, "copay": round(min(flat, cash_price), 2),
            "basis": f"tier {med['tier']}: flat copay {flat:.2f} (never more than the cash price)"}


def allergy_conflicts(patient_id, med):
    conflicts = []
    for allergy in db.find("allergies", {"patient_id": patient_id}):
        if allergy["allergen_class"] == med["drug_class"]:
            conflicts.append({"allergy_id": allergy["allergy_id"], "allergen_class": allergy["allergen_class"],
                              "severity": allergy["severity"], "reaction": allergy["reaction"],
                              "reason": f"{med['name']} is in the {med['drug_class']} class"})
        elif allergy["severity"] == "severe" and CROSS_SENSITIVE.get(allergy["allergen_class"]) == med["drug_class"]:
            conflicts.append({"allergy_id": allergy["allergy_id"], "allergen_class": allergy["allergen_class"],
                              "severity": allergy["severity"], "reaction": allergy["reaction"],
                              "reason": f"severe {allergy['allergen_class']} allergy: cross-sensitivity with {med['drug_class']}"})
    return conflicts


def age_on(date_of_birth, day):
    age = int(day[:4]) - int(date_of_birth[:4])
    if day[5:10] < date_of_birth[5:10]:
        age -= 1
    return age


def minutes_of_day(moment):
    return int(moment[11:13]) * 60 + int(moment[14:16])


def minutes_until(moment):
    now = clock.now()
    return clock.days_between(now, moment) * 1440 + minutes_of_day(moment) - minutes_of_day(now)


def seats_taken(slot_id):
    return db.count("appointments", {"slot_id": slot_id, "status": "booked"})


def public_patient(patient):
    return {"patient_id": patient["patient_id"], "first_name": patient["first_name"],
            "last_name": patient["last_name"]}


def prescription_view(rx):
    med = db.get("medications", rx["medication_id"])
    doc = db.get("prescribers", rx["prescriber_id"])
    view = dict(rx)
    view.update({"medication": medication_label(med), "drug_class": med["drug_class"],
                 "controlled_schedule": med["controlled_schedule"], "therapy": med["therapy"],
                 "prescriber": f"{doc['first_name']} {doc['last_name']}, {doc['credential']}",
                 "next_refill_on": earliest_refill_on(rx)})
    return view


def fill_view(fill):
    rx = db.get("prescriptions", fill["prescription_id"])
    med = db.get("medications", rx["medication_id"])
    view = dict(fill)
    view.update({"medication_id": med["medication_id"], "medication": medication_label(med)})
    return view


def release_fill(fill):
    """Cancel an open fill: the units go back to stock and a used refill is given back."""
    rx = db.get("prescriptions", fill["prescription_id"])
    med = db.get("medications", rx["medication_id"])
    db.update("medications", med["medication_id"], {"stock": med["stock"] + fill["quantity"]})
    if fill["fill_type"] == "refill":
        db.update("prescriptions", rx["prescription_id"],
                  {"refills_remaining": min(rx["refills_remaining"] + 1, rx["refills_authorized"])})
    return db.update("fills", fill["fill_id"], {"status": "cancelled", "pickup_by": None})


@tool("read")
def find_patient(first_name: str, last_name: str, date_of_birth: str) -> dict:
    """Find a patient's id from their full name and date of birth.

    Args:
        first_name: Given name, e.g. "Maria".
        last_name: Family name, e.g. "Gonzalez".
        date_of_birth: Date of birth as YYYY-MM-DD, e.g. "1961-07-23".
    """
    rows = [p for p in db.find("patients", {"date_of_birth": date_of_birth.strip()})
            if p["first_name"].lower() == first_name.strip().lower()
            and p["last_name"].lower() == last_name.strip().lower()]
    if not rows:
        raise ToolError(f"no patient named {first_name} {last_name} born {date_of_birth}")
    if len(rows) > 1:
        raise ToolError("more than one patient matches; ask for the phone number instead")
    return public_patient(rows[0])


@tool("read")
def find_patient_by_phone(phone: str) -> dict:
    """Find a patient's id from the phone number on file (any formatting).

    Args:
        phone: The patient's phone number, e.g. "(503) 555-0147".
    """
    digits = digits_of(phone)
    if len(digits) == 11 and digits.startswith("1"):
        digits = digits[1:]
    if len(digits) != 10:
        raise ToolError(f"{phone} is not a 10-digit US phone number")
    rows = [p for p in db.find("patients") if digits_of(p["phone"]) == digits]
    if not rows:
        raise ToolError(f"no patient with phone number {phone}")
    return public_patient(rows[0])


@tool("write")
def verify_identity(patient_id: str, date_of_birth: str, zip_code: str) -> dict:
    """Verify the caller is the patient, by date of birth and the ZIP code on file.

    Required once per conversation before any patient record is shown or changed.

    Args:
        patient_id: The patient's id, e.g. "PAT-000012".
        date_of_birth: Date of birth as YYYY-MM-DD, e.g. "1961-07-23".
        zip_code: The five-digit ZIP code of the patient's address, e.g. "97214".
    """
    patient = db.get("patients", patient_id)
    if patient["date_of_birth"] != date_of_birth.strip() or patient["zip_code"] != zip_code.strip()[:5]:
        raise ToolError("identity could not be verified with the details given")
    done = db.find("identity_checks", {"patient_id": patient_id})
    if done:
        return {"patient_id": patient_id, "verified": True, "check_id": done[0]["check_id"]}
    check = db.insert("identity_checks", {"patient_id": patient_id, "verified_at": clock.now(),
                                          "method": "dob_and_zip"})
    return {"patient_id": patient_id, "verified": True, "check_id": check["check_id"]}


@tool("read")
def get_patient_profile(patient_id: str) -> dict:
    """Show a verified patient's record: contact details, insurance plan and recorded allergies.

    Args:
        patient_id: The patient's id, e.g. "PAT-000012".
    """
    patient = verified_patient(patient_id)
    plan = db.get("insurance_plans", patient["plan_id"])
    profile = dict(patient)
    profile.update({"plan_name": plan["name"], "plan_status": plan["status"],
                    "allergies": db.find("allergies", {"patient_id": patient_id}, order_by="recorded_on")})
    return profile


@tool("read")
def list_prescriptions(patient_id: str,
                       status: Literal["active", "expired", "cancelled", "transferred"] | None = None) -> list:
    """List a verified patient's prescriptions with medication, prescriber, refills left and next refill date.

    Args:
        patient_id: The patient's id, e.g. "PAT-000012".
        status: Only prescriptions in this status, e.g. "active".
    """
    verified_patient(patient_id)
    rows = db.find("prescriptions", {"patient_id": patient_id}, order_by="-written_on")
    if status:
        rows = [r for r in rows if r["status"] == status]
    return [prescription_view(r) for r in rows]


@tool("read")
def list_fills(patient_id: str, status: Literal["pending", "ready", "picked_up", "cancelled"] | None = None) -> list:
    """List the fills (new and refill orders) of a verified patient's prescriptions, newest first.

    Args:
        patient_id: The patient's id, e.g. "PAT-000012".
        status: Only fills in this status, e.g. "ready".
    """
    verified_patient(patient_id)
    fills = []
    for rx in db.find("prescriptions", {"patient_id": patient_id}):
        fills.extend(db.find("fills", {"prescription_id": rx["prescription_id"]}))
    if status:
        fills = [f for f in fills if f["status"] == status]
    fills = sorted(fills, key=lambda f: (f["requested_on"], f["fill_id"]), reverse=True)
    return [fill_view(f) for f in fills]


@tool("read")
def search_medications(query: str) -> list:
    """Look up medications in the formulary by name: strength, form, class, schedule, tier, price and stock.

    Args:
        query: Part of the medication name, e.g. "lisinopril".
    """
    text = query.strip().lower()
    if len(text) < 3:
        raise ToolError("give at least three letters of the medication name")
    rows = [m for m in db.find("medications", order_by="name") if text in m["name"].lower()]
    if not rows:
        raise ToolError(f"no medication matches {query!r}")
    out = []
    for med in rows:
        view = dict(med)
        view["in_stock"] = med["stock"] > 0
        out.append(view)
    return out


@tool("read")
def estimate_copay(patient_id: str, medication_id: str, quantity: int) -> dict:
    """Estimate what a verified patient pays for one fill of a medication under their insurance plan.

    Tiers 1-3 pay the plan's flat copay (never more than the cash price); tier 4 pays coinsurance up to
    the plan's cap; self-pay patients and terminated plans pay the cash price.

    Args:
        patient_id: The patient's id, e.g. "PAT-000012".
        medication_id: The medication's id, e.g. "MED-000008".
        quantity: Units dispensed in the fill, e.g. 30.
    """
    patient = verified_patient(patient_id)
    med = db.get("medications", medication_id)
    if quantity <= 0:
        raise ToolError("the quantity must be at least 1")
    plan = db.get("insurance_plans", patient["plan_id"])
    estimate = copay_for(patient, med, quantity)
    estimate.update({"medication_id": medication_id, "medication": medication_label(med), "tier": med["tier"],
                     "quantity": quantity, "plan_id": plan["plan_id"], "plan_name": plan["name"]})
    return estimate


@tool("read")
def check_allergy_conflicts(patient_id: str, medication_id: str) -> dict:
    """Check a medication against a verified patient's allergies and active prescriptions before dispensing.

    Reports allergy conflicts (same class, or cross-sensitivity after a severe penicillin allergy) and
    duplicate therapy (another active prescription in the same drug class).

    Args:
        patient_id: The patient's id, e.g. "PAT-000012".
        medication_id: The medication's id, e.g. "MED-000001".
    """
    verified_patient(patient_id)
    med = db.get("medications", medication_id)
    conflicts = allergy_conflicts(patient_id, med)
    duplicates = []
    for rx in db.find("prescriptions", {"patient_id": patient_id, "status": "active"}):
        other = db.get("medications", rx["medication_id"])
        if other["drug_class"] == med["drug_class"] and rx["medication_id"] != medication_id:  # not its own refill
            duplicates.append({"prescription_id": rx["prescription_id"], "medication": medication_label(other)})
    return {"medication_id": medication_id, "medication": medication_label(med), "drug_class": med["drug_class"],
            "allergy_conflicts": conflicts, "duplicate_therapy": duplicates, "safe_to_dispense": not conflicts}


@tool("read")
def list_insurance_plans() -> list:
    """List the insurance plans the pharmacy knows, with tier copays, vaccine coverage and status."""
    return db.find("insurance_plans", order_by="name")


@tool("read")
def find_pharmacies(query: str) -> list:
    """Find pharmacies in the transfer directory by part of their name or city.

    Args:
        query: Part of a pharmacy name or a city, e.g. "Beaverton".
    """
    text = query.strip().lower()
    if not text:
        raise ToolError("give part of a pharmacy name or a city")
    rows = [p for p in db.find("pharmacies") if text in p["name"].lower() or text in p["city"].lower()]
    if not rows:
        raise ToolError(f"no pharmacy in the directory matches {query!r}")
    return rows


@tool("read")
def list_services(kind: Literal["vaccination", "consultation"] | None = None) -> list:
    """List the vaccinations and consultations offered, with age limits and list prices.

    Args:
        kind: Only "vaccination" or "consultation" services, e.g. "vaccination".
    """
    rows = db.find("services", order_by="name")
    if kind:
        rows = [s for s in rows if s["kind"] == kind]
    return rows


@tool("read")
def find_available_slots(service_id: str, start_date: str, end_date: str) -> list:
    """List open slots with free seats for a service between two dates (inclusive), earliest first.

    Args:
        service_id: The service's id, e.g. "SVC-000001".
        start_date: First day to search, YYYY-MM-DD, e.g. "2026-04-20".
        end_date: Last day to search, YYYY-MM-DD, e.g. "2026-04-24".
    """
    service = db.get("services", service_id)
    if clock.days_between(start_date, end_date) < 0:
        raise ToolError("the end date is before the start date")
    if clock.days_between(start_date, end_date) > 31:
        raise ToolError("search at most 31 days at a time")
    out = []
    for slot in db.find("slots", {"service_id": service_id, "status": "open"}, order_by="starts_at"):
        day = slot["starts_at"][:10]
        if day < start_date or day > end_date or slot["starts_at"] <= clock.now():
            continue
        seats = slot["capacity"] - seats_taken(slot["slot_id"])
        if seats > 0:
            out.append({"slot_id": slot["slot_id"], "service_id": service_id, "service": service["name"],
                        "starts_at": slot["starts_at"], "seats_left": seats, "pharmacist": slot["pharmacist"]})
    return out


@tool("read")
def list_appointments(patient_id: str) -> list:
    """List a verified patient's appointments with service, time and status, earliest first.

    Args:
        patient_id: The patient's id, e.g. "PAT-000012".
    """
    verified_patient(patient_id)
    out = []
    for appointment in db.find("appointments", {"patient_id": patient_id}):
        slot = db.get("slots", appointment["slot_id"])
        service = db.get("services", slot["service_id"])
        view = dict(appointment)
        view.update({"service_id": service["service_id"], "service": service["name"],
                     "starts_at": slot["starts_at"], "pharmacist": slot["pharmacist"]})
        out.append(view)
    return sorted(out, key=lambda a: (a["starts_at"], a["appointment_id"]))


@tool("write")
def request_refill(patient_id: str, prescription_id: str) -> dict:
    """Order a refill of an active prescription; it is held for pickup for 10 days.

    Refused when the prescription is not active or has expired, has no refills left, is for a controlled
    substance, already has an open fill, is too early (less than 75% of the days' supply has elapsed since
    the last fill), conflicts with a recorded allergy, or stock does not cover the quantity.

    Args:
        patient_id: The patient's id, e.g. "PAT-000012".
        prescription_id: The prescription's id, e.g. "RX-000034".
    """
    patient = verified_patient(patient_id)
    rx = owned_prescription(patient_id, prescription_id)
    med = db.get("medications", rx["medication_id"])
    if rx["status"] != "active":
        raise ToolError(f"prescription {prescription_id} is {rx['status']}; only active prescriptions can be refilled")
    if rx["expires_on"] < clock.today():
        raise ToolError(f"prescription {prescription_id} expired on {rx['expires_on']}; the prescriber must renew it")
    if med["controlled_schedule"] != "none":
        raise ToolError(f"{med['name']} is a schedule {med['controlled_schedule']} controlled substance; "
                        "it cannot be refilled here and needs a new prescription from the prescriber")
    if rx["refills_remaining"] <= 0:
        raise ToolError(f"prescription {prescription_id} has no refills left; the prescriber must renew it")
    if open_fills_of(prescription_id):
        raise ToolError(f"prescription {prescription_id} already has an open fill waiting")
    earliest = earliest_refill_on(rx)
    if clock.today() < earliest:
        raise ToolError(f"too early to refill: the last fill was on {rx['last_filled_on']} for "
                        f"{rx['days_supply']} days; the earliest refill date is {earliest}")
    conflicts = allergy_conflicts(patient_id, med)
    if conflicts:
        raise ToolError(f"cannot dispense {med['name']}: it conflicts with the recorded "
                        f"{conflicts[0]['allergen_class']} allergy ({conflicts[0]['severity']})")
    if med["stock"] < rx["quantity"]:
        raise ToolError(f"{medication_label(med)} is out of stock ({med['stock']} on hand, {rx['quantity']} needed)")
    price = copay_for(patient, med, rx["quantity"])
    db.update("medications", med["medication_id"], {"stock": med["stock"] - rx["quantity"]})
    updated = db.update("prescriptions", prescription_id, {"refills_remaining": rx["refills_remaining"] - 1})
    fill = db.insert("fills", {"prescription_id": prescription_id, "fill_type": "refill", "status": "pending",
                               "requested_on": clock.today(), "quantity": rx["quantity"], "copay": price["copay"],
                               "pickup_by": clock.add_days(clock.today(), PICKUP_HOLD_DAYS)})
    return {"fill_id": fill["fill_id"], "prescription_id": prescription_id, "medication": medication_label(med),
            "quantity": fill["quantity"], "status": fill["status"], "copay": fill["copay"],
            "pickup_by": fill["pickup_by"], "refills_remaining": updated["refills_remaining"]}


@tool("write")
def cancel_fill(patient_id: str, fill_id: str) -> dict:
    """Cancel a pending or ready fill: the units return to stock and a used refill is given back.

    Args:
        patient_id: The patient's id, e.g. "PAT-000012".
        fill_id: The fill's id, e.g. "FIL-000051".
    """
    verified_patient(patient_id)
    fill = owned_fill(patient_id, fill_id)
    if fill["status"] not in OPEN_FILL_STATUSES:
        raise ToolError(f"fill {fill_id} is {fill['status']}; only pending or ready fills can be cancelled")
    cancelled = release_fill(fill)
    rx = db.get("prescriptions", fill["prescription_id"])
    return {"fill_id": fill_id, "status": cancelled["status"], "prescription_id": rx["prescription_id"],
            "refills_remaining": rx["refills_remaining"]}


@tool("write")
def transfer_prescription(patient_id: str, prescription_id: str, pharmacy_id: str) -> dict:
    """Transfer an active prescription's remaining refills to another pharmacy in the directory.

    Controlled substances, expired prescriptions, prescriptions without refills left and those with an
    open fill cannot be transferred; the receiving pharmacy must accept transfers.

    Args:
        patient_id: The patient's id, e.g. "PAT-000012".
        prescription_id: The prescription's id, e.g. "RX-000034".
        pharmacy_id: The receiving pharmacy's id, e.g. "PHM-000004".
    """
    verified_patient(patient_id)
    rx = owned_prescription(patient_id, prescription_id)
    med = db.get("medications", rx["medication_id"])
    pharmacy = db.get("pharmacies", pharmacy_id)
    if rx["status"] != "active":
        raise ToolError(f"prescription {prescription_id} is {rx['status']}; only active prescriptions can be transferred")
    if rx["expires_on"] < clock.today():
        raise ToolError(f"prescription {prescription_id} expired on {rx['expires_on']}")
    if med["controlled_schedule"] != "none":
        raise ToolError(f"{med['name']} is a controlled substance (schedule {med['controlled_schedule']}); "
                        "controlled prescriptions are not transferred")
    if rx["refills_remaining"] <= 0:
        raise ToolError(f"prescription {prescription_id} has no refills left to transfer")
    if open_fills_of(prescription_id):
        raise ToolError(f"prescription {prescription_id} has an open fill; cancel or pick it up before transferring")
    if pharmacy["is_ours"] or pharmacy_id == OUR_PHARMACY:
        raise ToolError("the prescription is already at this pharmacy")
    if not pharmacy["accepts_transfers"]:
        raise ToolError(f"{pharmacy['name']} does not accept prescription transfers")
    db.update("prescriptions", prescription_id, {"status": "transferred", "transferred_to": pharmacy_id})
    return {"prescription_id": prescription_id, "status": "transferred", "medication": medication_label(med),
            "refills_transferred": rx["refills_remaining"], "pharmacy_id": pharmacy_id,
            "pharmacy": pharmacy["name"], "pharmacy_phone": pharmacy["phone"]}


@tool("write")
def record_allergy(patient_id: str,
                   allergen_class: Literal["penicillins", "cephalosporins", "sulfonamides", "macrolides",
                                           "fluoroquinolones", "tetracyclines", "nsaids", "opioids", "statins",
                                           "ace_inhibitors", "ssris", "anticonvulsants", "latex"],
                   reaction: Literal["rash", "hives", "swelling", "anaphylaxis", "nausea", "breathing_difficulty",
                                     "muscle_pain", "cough"],
                   severity: Literal["mild", "moderate", "severe"]) -> dict:
    """Record a new drug allergy; open fills of medications it now rules out are cancelled.

    Args:
        patient_id: The patient's id, e.g. "PAT-000012".
        allergen_class: The drug class the patient reacted to, e.g. "sulfonamides".
        reaction: What happened, e.g. "hives".
        severity: How bad the reaction was, e.g. "moderate".
    """
    verified_patient(patient_id)
    if db.find("allergies", {"patient_id": patient_id, "allergen_class": allergen_class}):
        raise ToolError(f"an allergy to {allergen_class} is already on record")
    allergy = db.insert("allergies", {"patient_id": patient_id, "allergen_class": allergen_class,
                                      "reaction": reaction, "severity": severity, "recorded_on": clock.today()})
    cancelled = []
    for rx in db.find("prescriptions", {"patient_id": patient_id}):
        med = db.get("medications", rx["medication_id"])
        if not allergy_conflicts(patient_id, med):
            continue
        for fill in open_fills_of(rx["prescription_id"]):
            release_fill(fill)
            cancelled.append({"fill_id": fill["fill_id"], "medication": medication_label(med)})
    return {"allergy_id": allergy["allergy_id"], "allergen_class": allergen_class, "reaction": reaction,
            "severity": severity, "cancelled_fills": cancelled}


@tool("write")
def book_appointment(patient_id: str, slot_id: str) -> dict:
    """Book a verified patient into an open future slot that has a free seat.

    The patient's age on the day must be within the service's limits, and a patient holds at most one
    upcoming booking per service. Vaccinations cost nothing on an active plan that covers vaccines;
    otherwise the list price is charged at the visit.

    Args:
        patient_id: The patient's id, e.g. "PAT-000012".
        slot_id: The slot's id, e.g. "SLT-000007".
    """
    patient = verified_patient(patient_id)
    slot = db.get("slots", slot_id)
    service = db.get("services", slot["service_id"])
    if slot["status"] != "open":
        raise ToolError(f"slot {slot_id} is {slot['status']}")
    if slot["starts_at"] <= clock.now():
        raise ToolError(f"slot {slot_id} has already started")
    if seats_taken(slot_id) >= slot["capacity"]:
        raise ToolError(f"slot {slot_id} is full")
    age = age_on(patient["date_of_birth"], slot["starts_at"][:10])
    if age < service["min_age"] or age > service["max_age"]:
        raise ToolError(f"{service['name']} is for ages {service['min_age']} to {service['max_age']}; "
                        f"the patient will be {age}")
    for appointment in db.find("appointments", {"patient_id": patient_id, "status": "booked"}):
        other = db.get("slots", appointment["slot_id"])
        if other["service_id"] == service["service_id"] and other["starts_at"] > clock.now():
            raise ToolError(f"the patient already has {service['name']} booked for {other['starts_at']} "
                            f"({appointment['appointment_id']}); cancel it first to rebook")
    plan = db.get("insurance_plans", patient["plan_id"])
    covered = service["kind"] == "vaccination" and plan["vaccines_covered"] and plan["status"] == "active"
    charge = 0.0 if covered else service["price"]
    appointment = db.insert("appointments", {"slot_id": slot_id, "patient_id": patient_id, "status": "booked",
                                             "booked_on": clock.today()})
    return {"appointment_id": appointment["appointment_id"], "service": service["name"],
            "starts_at": slot["starts_at"], "pharmacist": slot["pharmacist"], "status": "booked",
            "charge": charge, "covered_by_plan": covered}


@tool("write")
def cancel_appointment(patient_id: str, appointment_id: str) -> dict:
    """Cancel a booked appointment, at least 2 hours before it starts.

    Args:
        patient_id: The patient's id, e.g. "PAT-000012".
        appointment_id: The appointment's id, e.g. "APT-000021".
    """
    verified_patient(patient_id)
    appointment = owned_appointment(patient_id, appointment_id)
    if appointment["status"] != "booked":
        raise ToolError(f"appointment {appointment_id} is {appointment['status']}; only booked appointments can be cancelled")
    slot = db.get("slots", appointment["slot_id"])
    if minutes_until(slot["starts_at"]) < CANCEL_NOTICE_MINUTES:
        raise ToolError(f"appointments can be cancelled only up to 2 hours before they start ({slot['starts_at']})")
    db.update("appointments", appointment_id, {"status": "cancelled"})
    return {"appointment_id": appointment_id, "status": "cancelled", "starts_at": slot["starts_at"]}


@tool("write")
def update_insurance(patient_id: str, plan_id: str, member_id: str | None = None) -> dict:
    """Put a verified patient on another insurance plan; copays of open fills are recalculated.

    Args:
        patient_id: The patient's id, e.g. "PAT-000012".
        plan_id: The new plan's id, e.g. "PLN-000002".
        member_id: The member id on the insurance card (6-12 letters or digits; not for self-pay), e.g. "EVG4829103".
    """
    patient = verified_patient(patient_id)
    plan = db.get("insurance_plans", plan_id)
    if plan["status"] != "active":
        raise ToolError(f"{plan['name']} is {plan['status']}; the pharmacy can no longer bill it")
    if plan["kind"] == "self_pay":
        member = None
    else:
        member = (member_id or "").strip().upper().replace(" ", "").replace("-", "")
        if not (MEMBER_ID_MIN <= len(member) <= MEMBER_ID_MAX) or not all([c.isalpha() or c.isdigit() for c in member]):
            raise ToolError(f"a member id of {MEMBER_ID_MIN} to {MEMBER_ID_MAX} letters or digits is needed for {plan['name']}")
    if plan_id == patient["plan_id"] and member == patient["member_id"]:
        raise ToolError(f"the patient is already on {plan['name']} with that member id")
    patient = db.update("patients", patient_id, {"plan_id": plan_id, "member_id": member})
    repriced = []
    for rx in db.find("prescriptions", {"patient_id": patient_id}):
        med = db.get("medications", rx["medication_id"])
        for fill in open_fills_of(rx["prescription_id"]):
            copay = copay_for(patient, med, fill["quantity"])["copay"]
            db.update("fills", fill["fill_id"], {"copay": copay})
            repriced.append({"fill_id": fill["fill_id"], "medication": medication_label(med), "copay": copay})
    return {"patient_id": patient_id, "plan_id": plan_id, "plan_name": plan["name"], "member_id": member,
            "repriced_fills": repriced}


@tool("write")
def request_renewal(patient_id: str, prescription_id: str) -> dict:
    """Ask the prescriber for a new prescription to replace an expired, used-up or controlled one.

    Only chronic medications are renewed, only while the prescriber is active, and once per prescription
    until the prescriber answers.

    Args:
        patient_id: The patient's id, e.g. "PAT-000012".
        prescription_id: The prescription's id, e.g. "RX-000034".
    """
    verified_patient(patient_id)
    rx = owned_prescription(patient_id, prescription_id)
    med = db.get("medications", rx["medication_id"])
    doc = db.get("prescribers", rx["prescriber_id"])
    if rx["status"] not in ["active", "expired"]:
        raise ToolError(f"prescription {prescription_id} is {rx['status']}; it cannot be renewed here")
    if med["therapy"] != "chronic":
        raise ToolError(f"{med['name']} was a short course; the patient needs a new visit, not a renewal")
    expired = rx["status"] == "expired" or rx["expires_on"] < clock.today()
    if not expired and rx["refills_remaining"] > 0 and med["controlled_schedule"] == "none":
        raise ToolError(f"prescription {prescription_id} still has {rx['refills_remaining']} refill(s) left; request a refill instead")
    if doc["status"] != "active":
        raise ToolError(f"{doc['first_name']} {doc['last_name']} is {doc['status']}; the patient needs a new prescriber")
    if db.find("renewal_requests", {"prescription_id": prescription_id, "status": "sent"}):
        raise ToolError(f"a renewal request for {prescription_id} is already waiting for the prescriber")
    renewal = db.insert("renewal_requests", {"prescription_id": prescription_id, "prescriber_id": doc["prescriber_id"],
                                             "requested_on": clock.today(), "status": "sent"})
    return {"renewal_id": renewal["renewal_id"], "prescription_id": prescription_id, "status": "sent",
            "medication": medication_label(med), "prescriber": f"{doc['first_name']} {doc['last_name']}, {doc['credential']}",
            "clinic": doc["clinic"], "clinic_phone": doc["phone"]}


@tool("write")
def transfer_to_human_agents(reason: Literal["out_of_state_transfer", "specialty_medication", "caregiver", "other"],
                             summary: str | None = None) -> dict:
    """Hand the patient over to the pharmacist on duty, when the policy says a request is theirs to handle.

    Args:
        reason: Why the patient is handed over, e.g. "out_of_state_transfer".
        summary: A short note of the request for the pharmacist, e.g. "wants Lisinopril moved to a Vancouver, WA pharmacy".
    """
    handoff = db.insert("handoffs", {"reason": reason, "requested_at": clock.now()})
    return {"handoff_id": handoff["handoff_id"], "status": "transferred", "reason": reason}
