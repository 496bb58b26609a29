"""University registrar help-desk tools. Restricted Python: `db`, `clock` and `ToolError` are given, nothing is imported."""

ACTIVE_STATUSES = ["enrolled", "waitlisted"]
PASSING_GRADES = ["A", "A-", "B+", "B", "B-", "C+", "C", "C-", "D+", "D", "P"]
GRADE_POINTS = {"A": 4.0, "A-": 3.7, "B+": 3.3, "B": 3.0, "B-": 2.7, "C+": 2.3, "C": 2.0, "C-": 1.7,
                "D+": 1.3, "D": 1.0, "F": 0.0}
MAX_PASS_FAIL_PER_TERM = 1
CARD_FEE_RATE = 0.0275
MIN_PAYMENT = 25.0
TRANSCRIPT_FEES = {"electronic": 12.0, "mail": 15.0}
MAX_TRANSCRIPT_COPIES = 5
TRANSCRIPT_DUE_DAYS = 30
FINAL_YEAR = 4


# ---------------------------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------------------------

def verified_student(student_id):
    student = db.get("students", student_id)
    db.ensure("identity_checks", {"student_id": student_id},
              "identity not verified: call verify_identity for this student first")
    return student


def normalize_code(code):
    return code.replace(" ", "").replace("-", "").upper()


def normalize_postcode(code):
    return code.replace(" ", "").replace("-", "").upper()


def term_record(term):
    rows = db.find("terms", {"term_code": term.strip().upper()})
    if not rows:
        raise ToolError(f"there is no term {term}; terms look like 2026SU")
    return rows[0]


def course_of(section):
    return db.get("courses", section["course_code"])


def term_enrollments(student_id, term):
    """The student's enrolled or waitlisted sections in one term, as (enrollment, section) pairs."""
    pairs = []
    for enrollment in db.find("enrollments", {"student_id": student_id}):
        if enrollment["status"] not in ACTIVE_STATUSES:
            continue
        section = db.get("sections", enrollment["section_id"])
        if section["term"] == term:
            pairs.append([enrollment, section])
    return pairs


def active_enrollment(student_id, section_id):
    db.get("sections", section_id)
    rows = [e for e in db.find("enrollments", {"student_id": student_id, "section_id": section_id})
            if e["status"] in ACTIVE_STATUSES]
    if not rows:
        raise ToolError(f"student {student_id} is not enrolled or waitlisted in section {section_id}")
    return rows[0]


def has_passed(student_id, course_code):
    for enrollment in db.find("enrollments", {"student_id": student_id, "status": "completed"}):
        if enrollment["grade"] in PASSING_GRADES:
            if db.get("sections", enrollment["section_id"])["course_code"] == course_code:
                return True
    return False


def overlaps(a, b):
    shared = [d for d in a["days"] if d in b["days"]]
    return len(shared) > 0 and a["start_time"] < b["end_time"] and b["start_time"] < a["end_time"]


def check_no_clash(pairs, section, ignore_section_id):
    for enrollment, other in pairs:
        if other["section_id"] == ignore_section_id:
            continue
        if overlaps(other, section):
            raise ToolError(f"section {section['section_id']} ({section['days']} {section['start_time']}-"
                            f"{section['end_time']}) clashes with {other['course_code']} section "
                            f"{other['section_id']} ({other['days']} {other['start_time']}-{other['end_time']})")


def credit_ceiling(student, term):
    return min(student["credit_limit"], term["max_credits"])


def term_credits(pairs, ignore_section_id):
    return sum(course_of(s)["credits"] for e, s in pairs if s["section_id"] != ignore_section_id)


def check_pass_fail(student, course, pairs, ignore_enrollment_id):
    if not course["pass_fail_allowed"]:
        raise ToolError(f"{course['course_code']} may only be taken for a letter grade")
    program = db.get("programs", student["program_code"])
    if course["department"] == program["department"]:
        raise ToolError(f"{course['course_code']} is in the student's major department ({program['department']}); "
                        "major courses must be taken for a letter grade")
    already = [e for e, s in pairs if e["grading_option"] == "pass_fail" and e["enrollment_id"] != ignore_enrollment_id]
    if len(already) >= MAX_PASS_FAIL_PER_TERM:
        raise ToolError(f"at most {MAX_PASS_FAIL_PER_TERM} pass/fail course per term; "
                        f"{already[0]['section_id']} is already pass/fail")


def check_registration_open(term):
    today = clock.today()
    if today < term["registration_opens"]:
        raise ToolError(f"registration for {term['name']} opens on {term['registration_opens']}")
    if today > term["add_deadline"]:
        raise ToolError(f"the add deadline for {term['name']} ({term['add_deadline']}) has passed; "
                        "sections can no longer be added or swapped")


def check_no_hold(student, action):
    if student["hold"] != "none":
        raise ToolError(f"student {student['student_id']} has a {student['hold']} hold; {action} is blocked "
                        "until it is cleared")


def section_view(section):
    course = course_of(section)
    return {"section_id": section["section_id"], "course_code": section["course_code"], "title": course["title"],
            "credits": course["credits"], "term": section["term"], "section_number": section["section_number"],
            "instructor": section["instructor"], "days": section["days"], "start_time": section["start_time"],
            "end_time": section["end_time"], "room": section["room"], "capacity": section["capacity"],
            "enrolled": section["enrolled"], "seats_open": max(section["capacity"] - section["enrolled"], 0),
            "waitlisted": section["waitlisted"],
            "waitlist_open": max(section["waitlist_capacity"] - section["waitlisted"], 0)}


def gpa_summary(student_id, term):
    points = 0.0
    graded = 0
    earned = 0
    for enrollment in db.find("enrollments", {"student_id": student_id, "status": "completed"}):
        section = db.get("sections", enrollment["section_id"])
        if term is not None and section["term"] != term:
            continue
        credits = course_of(section)["credits"]
        grade = enrollment["grade"]
        if grade in PASSING_GRADES:
            earned += credits
        if grade in GRADE_POINTS:
            points += GRADE_POINTS[grade] * credits
            graded += credits
    gpa = round(points / graded, 2) if graded else None
    return {"student_id": student_id, "term": term, "gpa": gpa, "graded_credits": graded,
            "quality_points": round(points, 2), "credits_earned": earned}


def remaining_of(invoice):
    return round(invoice["amount"] - invoice["amount_paid"], 2)


def past_due_open(student_id):
    today = clock.today()
    return [i for i in db.find("invoices", {"student_id": student_id, "status": "open"})
            if i["due_date"] < today and remaining_of(i) > 0]


def public_student(student):
    return {"student_id": student["student_id"], "first_name": student["first_name"],
            "last_name": student["last_name"]}


# ---------------------------------------------------------------------------------------------
# identity
# ---------------------------------------------------------------------------------------------

@tool("read")
def find_student_by_email(email: str) -> dict:
    """Find a student's id from the email address on file.

    Args:
        email: The student's email address, e.g. "maya.okafor27@stu.northfield.edu".
    """
    return public_student(db.one("students", {"email": email.strip().lower()}))


@tool("read")
def find_student_by_name(first_name: str, last_name: str, date_of_birth: str) -> dict:
    """Find a student's id from their full name and date of birth.

    Args:
        first_name: Given name, e.g. "Maya".
        last_name: Family name, e.g. "Okafor".
        date_of_birth: Date of birth as YYYY-MM-DD, e.g. "2004-03-09".
    """
    rows = db.find("students", {"first_name": first_name.strip(), "last_name": last_name.strip(),
                                "date_of_birth": date_of_birth})
    if not rows:
        raise ToolError(f"no student named {first_name} {last_name} born {date_of_birth}")
    if len(rows) > 1:
        raise ToolError("more than one student matches; ask for the email address instead")
    return public_student(rows[0])


@tool("write")
def verify_identity(student_id: str, date_of_birth: str, postal_code: str) -> dict:
    """Verify the caller is the student, by date of birth and the home postal code on file.

    Required once per conversation before any student record is shown or changed.

    Args:
        student_id: The student's id, e.g. "STU-000042".
        date_of_birth: Date of birth as YYYY-MM-DD, e.g. "2004-03-09".
        postal_code: Home postal code on file, e.g. "30005".
    """
    student = db.get("students", student_id)
    if student["date_of_birth"] != date_of_birth or \
            normalize_postcode(student["postal_code"]) != normalize_postcode(postal_code):
        raise ToolError("identity could not be verified with the details given")
    done = db.find("identity_checks", {"student_id": student_id})
    if done:
        return {"student_id": student_id, "verified": True, "check_id": done[0]["check_id"]}
    check = db.insert("identity_checks", {"student_id": student_id, "verified_at": clock.now(),
                                          "method": "dob_and_postcode"})
    return {"student_id": student_id, "verified": True, "check_id": check["check_id"]}


@tool("read")
def get_student_profile(student_id: str) -> dict:
    """Show a verified student's record: contact details, program, year, standing, credit limit and hold.

    Args:
        student_id: The student's id, e.g. "STU-000042".
    """
    student = verified_student(student_id)
    program = db.get("programs", student["program_code"])
    return {**student, "program_name": program["name"], "program_department": program["department"]}


# ---------------------------------------------------------------------------------------------
# catalog (public)
# ---------------------------------------------------------------------------------------------

@tool("read")
def list_terms() -> list:
    """List the academic terms with their registration, add, drop, grading-option and withdrawal deadlines."""
    return db.find("terms", order_by="starts_on")


@tool("read")
def list_programs() -> list:
    """List the degree programs (majors) with their department, minimum GPA to declare and whether they accept new majors."""
    return db.find("programs")


@tool("read")
def search_courses(keyword: str | None = None, department: str | None = None) -> list:
    """Search the course catalog by a word of the title or code, and/or by department.

    Args:
        keyword: A word in the course title or code, e.g. "genetics".
        department: Department code, e.g. "BIO".
    """
    rows = db.find("courses")
    if department:
        rows = [c for c in rows if c["department"] == department.strip().upper()]
    if keyword:
        word = keyword.strip().lower()
        code = normalize_code(keyword)
        rows = [c for c in rows if word in c["title"].lower() or code in c["course_code"]]
    return rows


@tool("read")
def list_sections(course_code: str, term: str | None = None) -> list:
    """List the sections of a course, optionally in one term, with meeting times, instructor and open seats.

    Args:
        course_code: The course code, e.g. "BIO210".
        term: Term code, e.g. "2026SU".
    """
    course = db.get("courses", normalize_code(course_code))
    where = {"course_code": course["course_code"]}
    if term:
        where["term"] = term_record(term)["term_code"]
    return [section_view(s) for s in db.find("sections", where, order_by="term")]


# ---------------------------------------------------------------------------------------------
# student records (verified)
# ---------------------------------------------------------------------------------------------

@tool("read")
def get_schedule(student_id: str, term: str) -> dict:
    """Show a verified student's enrolled and waitlisted sections in one term, with credits and credit limit.

    Args:
        student_id: The student's id, e.g. "STU-000042".
        term: Term code, e.g. "2026SP".
    """
    student = verified_student(student_id)
    record = term_record(term)
    courses = []
    for enrollment, section in term_enrollments(student_id, record["term_code"]):
        view = section_view(section)
        courses.append({"enrollment_id": enrollment["enrollment_id"], "section_id": section["section_id"],
                        "course_code": view["course_code"], "title": view["title"], "credits": view["credits"],
                        "section_number": section["section_number"], "instructor": section["instructor"],
                        "days": section["days"], "start_time": section["start_time"],
                        "end_time": section["end_time"], "room": section["room"], "status": enrollment["status"],
                        "grading_option": enrollment["grading_option"]})
    enrolled_credits = sum(c["credits"] for c in courses if c["status"] == "enrolled")
    waitlisted_credits = sum(c["credits"] for c in courses if c["status"] == "waitlisted")
    return {"student_id": student_id, "term": record["term_code"], "courses": courses,
            "enrolled_credits": enrolled_credits, "waitlisted_credits": waitlisted_credits,
            "credit_limit": credit_ceiling(student, record)}


@tool("read")
def get_unofficial_transcript(student_id: str) -> list:
    """List a verified student's courses term by term: completed with grades, withdrawn (W) and in progress.

    Args:
        student_id: The student's id, e.g. "STU-000042".
    """
    verified_student(student_id)
    lines = []
    for enrollment in db.find("enrollments", {"student_id": student_id}):
        if enrollment["status"] not in ["completed", "withdrawn", "enrolled"]:
            continue
        section = db.get("sections", enrollment["section_id"])
        course = course_of(section)
        lines.append({"term": section["term"], "course_code": course["course_code"], "title": course["title"],
                      "credits": course["credits"], "grading_option": enrollment["grading_option"],
                      "status": "in_progress" if enrollment["status"] == "enrolled" else enrollment["status"],
                      "grade": enrollment["grade"]})
    lines.sort(key=lambda line: (line["term"][:4], {"SP": 0, "SU": 1, "FA": 2}.get(line["term"][4:], 3),
                                 line["course_code"]))
    return lines


@tool("read")
def compute_gpa(student_id: str, term: str | None = None) -> dict:
    """Compute a verified student's GPA (cumulative, or for one term) from completed letter grades.

    A 4.0 scale weighted by credits; pass/fail grades and W do not count toward the GPA.

    Args:
        student_id: The student's id, e.g. "STU-000042".
        term: Only this term, e.g. "2025FA"; leave out for the cumulative GPA.
    """
    verified_student(student_id)
    code = term_record(term)["term_code"] if term else None
    return gpa_summary(student_id, code)


@tool("read")
def get_balance(student_id: str) -> dict:
    """Show a verified student's open invoices, what remains on each, what is past due and the total owed.

    Args:
        student_id: The student's id, e.g. "STU-000042".
    """
    student = verified_student(student_id)
    today = clock.today()
    invoices = []
    for invoice in db.find("invoices", {"student_id": student_id, "status": "open"}, order_by="due_date"):
        invoices.append({**invoice, "remaining": remaining_of(invoice), "past_due": invoice["due_date"] < today})
    total = round(sum(i["remaining"] for i in invoices), 2)
    past_due = round(sum(i["remaining"] for i in invoices if i["past_due"]), 2)
    return {"student_id": student_id, "open_invoices": invoices, "total_owed": total, "past_due": past_due,
            "hold": student["hold"]}


@tool("read")
def list_transcript_requests(student_id: str) -> list:
    """List a verified student's official transcript requests, newest first.

    Args:
        student_id: The student's id, e.g. "STU-000042".
    """
    verified_student(student_id)
    return db.find("transcript_requests", {"student_id": student_id}, order_by="-requested_on")


# ---------------------------------------------------------------------------------------------
# registration (writes)
# ---------------------------------------------------------------------------------------------

@tool("write")
def enroll_in_section(student_id: str, section_id: str,
                      grading_option: Literal["letter", "pass_fail"] = "letter") -> dict:
    """Register a verified student in a section; when the section is full they join its waitlist.

    Checks holds, the term's registration window, the course prerequisite, duplicate enrollment,
    the term credit limit, time clashes and, for pass/fail, the grading rules.

    Args:
        student_id: The student's id, e.g. "STU-000042".
        section_id: The section's id, e.g. "SEC-000031".
        grading_option: "letter" (default) or "pass_fail", e.g. "letter".
    """
    student = verified_student(student_id)
    check_no_hold(student, "registration")
    section = db.get("sections", section_id)
    term = db.get("terms", section["term"])
    check_registration_open(term)
    course = course_of(section)
    pairs = term_enrollments(student_id, term["term_code"])
    for enrollment, other in pairs:
        if other["course_code"] == course["course_code"]:
            raise ToolError(f"student is already {enrollment['status']} in {course['course_code']} for "
                            f"{term['name']} (section {other['section_id']}); swap sections instead")
    prerequisite = course["prerequisite"]
    if prerequisite and not has_passed(student_id, prerequisite):
        raise ToolError(f"{course['course_code']} requires {prerequisite} passed with a grade of D or better (or P)")
    if grading_option == "pass_fail":
        check_pass_fail(student, course, pairs, None)
    ceiling = credit_ceiling(student, term)
    current = term_credits(pairs, None)
    if current + course["credits"] > ceiling:
        raise ToolError(f"adding {course['credits']} credits to {current} would exceed the {term['name']} "
                        f"credit limit of {ceiling}")
    check_no_clash(pairs, section, None)
    if section["enrolled"] < section["capacity"]:
        status = "enrolled"
        position = None
        db.update("sections", section_id, {"enrolled": section["enrolled"] + 1})
    elif section["waitlisted"] < section["waitlist_capacity"]:
        status = "waitlisted"
        position = section["waitlisted"] + 1
        db.update("sections", section_id, {"waitlisted": position})
    else:
        raise ToolError(f"section {section_id} is full and its waitlist of {section['waitlist_capacity']} is full too")
    enrollment = db.insert("enrollments", {"student_id": student_id, "section_id": section_id, "status": status,
                                           "grading_option": grading_option, "grade": None,
                                           "enrolled_on": clock.today()})
    return {"enrollment_id": enrollment["enrollment_id"], "section_id": section_id,
            "course_code": course["course_code"], "term": term["term_code"], "status": status,
            "waitlist_position": position, "grading_option": grading_option,
            "term_credits": current + course["credits"], "credit_limit": ceiling}


@tool("write")
def drop_section(student_id: str, section_id: str) -> dict:
    """Drop a verified student's section, or leave its waitlist.

    Before the term's drop deadline the course is removed from the record; after it and up to the
    withdrawal deadline it stays on the transcript with a grade of W; after that it cannot be dropped.

    Args:
        student_id: The student's id, e.g. "STU-000042".
        section_id: The section's id, e.g. "SEC-000031".
    """
    verified_student(student_id)
    enrollment = active_enrollment(student_id, section_id)
    section = db.get("sections", section_id)
    term = db.get("terms", section["term"])
    today = clock.today()
    if enrollment["status"] == "waitlisted":
        if today > term["ends_on"]:
            raise ToolError(f"{term['name']} has ended")
        db.update("sections", section_id, {"waitlisted": max(section["waitlisted"] - 1, 0)})
        db.update("enrollments", enrollment["enrollment_id"], {"status": "dropped"})
        return {"enrollment_id": enrollment["enrollment_id"], "section_id": section_id, "status": "dropped",
                "grade": None, "note": "removed from the waitlist"}
    if today <= term["drop_deadline"]:
        status, grade = "dropped", None
    elif today <= term["withdraw_deadline"]:
        status, grade = "withdrawn", "W"
    else:
        raise ToolError(f"the withdrawal deadline for {term['name']} ({term['withdraw_deadline']}) has passed; "
                        "the course can no longer be dropped")
    db.update("sections", section_id, {"enrolled": max(section["enrolled"] - 1, 0)})
    db.update("enrollments", enrollment["enrollment_id"], {"status": status, "grade": grade})
    return {"enrollment_id": enrollment["enrollment_id"], "section_id": section_id,
            "course_code": section["course_code"], "status": status, "grade": grade}


@tool("write")
def swap_section(student_id: str, from_section_id: str, to_section_id: str) -> dict:
    """Move a verified student from one section of a course to another section of the same course and term.

    The student must be enrolled (not waitlisted) in the first section and the new one must have an
    open seat; the grading option is kept.

    Args:
        student_id: The student's id, e.g. "STU-000042".
        from_section_id: The section the student is in now, e.g. "SEC-000031".
        to_section_id: The section to move to, e.g. "SEC-000032".
    """
    student = verified_student(student_id)
    check_no_hold(student, "registration")
    enrollment = active_enrollment(student_id, from_section_id)
    if enrollment["status"] != "enrolled":
        raise ToolError(f"student is {enrollment['status']} in {from_section_id}; only enrolled sections can be swapped")
    source = db.get("sections", from_section_id)
    target = db.get("sections", to_section_id)
    if from_section_id == to_section_id:
        raise ToolError("the two sections must differ")
    if source["course_code"] != target["course_code"] or source["term"] != target["term"]:
        raise ToolError("a swap must be between sections of the same course in the same term")
    term = db.get("terms", source["term"])
    check_registration_open(term)
    if target["enrolled"] >= target["capacity"]:
        raise ToolError(f"section {to_section_id} has no open seat; swaps never go onto a waitlist")
    pairs = term_enrollments(student_id, term["term_code"])
    check_no_clash(pairs, target, from_section_id)
    db.update("sections", from_section_id, {"enrolled": max(source["enrolled"] - 1, 0)})
    db.update("sections", to_section_id, {"enrolled": target["enrolled"] + 1})
    db.update("enrollments", enrollment["enrollment_id"], {"section_id": to_section_id})
    return {"enrollment_id": enrollment["enrollment_id"], "course_code": source["course_code"],
            "from_section_id": from_section_id, "to_section_id": to_section_id, "instructor": target["instructor"],
            "days": target["days"], "start_time": target["start_time"], "end_time": target["end_time"],
            "room": target["room"]}


@tool("write")
def change_grading_option(student_id: str, section_id: str, grading_option: Literal["letter", "pass_fail"]) -> dict:
    """Switch a verified student's section between letter grading and pass/fail, before the term's grading-option deadline.

    Args:
        student_id: The student's id, e.g. "STU-000042".
        section_id: The section's id, e.g. "SEC-000031".
        grading_option: The new option, e.g. "pass_fail".
    """
    student = verified_student(student_id)
    enrollment = active_enrollment(student_id, section_id)
    section = db.get("sections", section_id)
    term = db.get("terms", section["term"])
    if clock.today() > term["grading_option_deadline"]:
        raise ToolError(f"the grading-option deadline for {term['name']} ({term['grading_option_deadline']}) has passed")
    if enrollment["grading_option"] == grading_option:
        raise ToolError(f"the section is already graded {grading_option}")
    if grading_option == "pass_fail":
        pairs = term_enrollments(student_id, term["term_code"])
        check_pass_fail(student, course_of(section), pairs, enrollment["enrollment_id"])
    db.update("enrollments", enrollment["enrollment_id"], {"grading_option": grading_option})
    return {"enrollment_id": enrollment["enrollment_id"], "section_id": section_id,
            "course_code": section["course_code"], "grading_option": grading_option}


@tool("write")
def declare_major(student_id: str, program_code: str) -> dict:
    """Declare or change a verified student's major.

    The program must accept new majors and the cumulative GPA must reach its minimum; students with
    an advising hold or in their final (4th) year cannot change major.

    Args:
        student_id: The student's id, e.g. "STU-000042".
        program_code: The program to declare, e.g. "ECON-BA".
    """
    student = verified_student(student_id)
    program = db.get("programs", program_code.strip().upper())
    if student["hold"] == "advising":
        raise ToolError("an advising hold blocks major changes; the student must meet their advisor first")
    if student["program_code"] == program["program_code"]:
        raise ToolError(f"the student is already in {program['program_code']}")
    if student["year"] >= FINAL_YEAR:
        raise ToolError("students in their final year cannot change major")
    if not program["accepting"]:
        raise ToolError(f"{program['name']} is not accepting new majors")
    summary = gpa_summary(student_id, None)
    gpa = summary["gpa"]
    if program["min_gpa"] > 0 and (gpa is None or gpa < program["min_gpa"]):
        shown = "no GPA yet" if gpa is None else f"a GPA of {gpa:.2f}"
        raise ToolError(f"{program['name']} needs a cumulative GPA of at least {program['min_gpa']:.2f}; "
                        f"the student has {shown}")
    db.update("students", student_id, {"program_code": program["program_code"]})
    return {"student_id": student_id, "previous_program": student["program_code"],
            "program_code": program["program_code"], "program_name": program["name"], "gpa": gpa}


# ---------------------------------------------------------------------------------------------
# money and transcripts (writes)
# ---------------------------------------------------------------------------------------------

@tool("write")
def pay_invoice(student_id: str, invoice_id: str, amount: float, method: Literal["card", "bank_transfer"]) -> dict:
    """Pay all or part of one of a verified student's open invoices.

    Card payments carry a 2.75% service fee on top; bank transfers are free. A financial hold is
    lifted once nothing past due remains.

    Args:
        student_id: The student's id, e.g. "STU-000042".
        invoice_id: The invoice's id, e.g. "INV-000087".
        amount: The amount to apply to the invoice, e.g. 250.0.
        method: "card" or "bank_transfer", e.g. "bank_transfer".
    """
    student = verified_student(student_id)
    invoice = db.owned("invoices", invoice_id, "student_id", student_id)
    if invoice["status"] != "open":
        raise ToolError(f"invoice {invoice_id} is {invoice['status']}; only open invoices can be paid")
    remaining = remaining_of(invoice)
    amount = round(amount, 2)
    if amount <= 0:
        raise ToolError("the amount must be greater than zero")
    if amount > remaining:
        raise ToolError(f"the payment exceeds the {remaining:.2f} remaining on invoice {invoice_id}")
    if amount < MIN_PAYMENT and amount != remaining:
        raise ToolError(f"a partial payment must be at least {MIN_PAYMENT:.2f}")
    fee = round(amount * CARD_FEE_RATE, 2) if method == "card" else 0.0
    paid = round(invoice["amount_paid"] + amount, 2)
    left = round(invoice["amount"] - paid, 2)
    status = "paid" if left == 0 else "open"
    db.update("invoices", invoice_id, {"amount_paid": paid, "status": status})
    payment = db.insert("payments", {"invoice_id": invoice_id, "amount": amount, "method": method,
                                     "service_fee": fee, "paid_on": clock.today()})
    hold = student["hold"]
    if hold == "financial" and not past_due_open(student_id):
        hold = "none"
        db.update("students", student_id, {"hold": "none"})
    return {"payment_id": payment["payment_id"], "invoice_id": invoice_id, "amount": amount, "method": method,
            "service_fee": fee, "total_charged": round(amount + fee, 2), "invoice_remaining": left,
            "invoice_status": status, "hold": hold}


@tool("write")
def request_transcript(student_id: str, delivery: Literal["electronic", "mail"], recipient: str,
                       copies: int = 1) -> dict:
    """Order an official transcript for a verified student; the fee is billed as a new invoice.

    Electronic delivery is one copy to an email address for 12.00; mailed copies cost 15.00 each
    (at most 5). Not possible while the student has a financial hold.

    Args:
        student_id: The student's id, e.g. "STU-000042".
        delivery: "electronic" or "mail", e.g. "electronic".
        recipient: Email address (electronic), or the receiving office as the student names it (mail), e.g. "admissions@gradschool.edu".
        copies: Number of copies, e.g. 1.
    """
    student = verified_student(student_id)
    if student["hold"] == "financial":
        raise ToolError("a financial hold blocks official transcripts until the past-due balance is paid")
    recipient = recipient.strip()
    if not recipient:
        raise ToolError("give the recipient")
    if delivery == "electronic":
        if copies != 1:
            raise ToolError("electronic transcripts are sent as a single copy")
        if "@" not in recipient or "." not in recipient.split("@")[-1]:
            raise ToolError(f"{recipient} is not a valid email address for electronic delivery")
        recipient = recipient.lower()
    if copies < 1 or copies > MAX_TRANSCRIPT_COPIES:
        raise ToolError(f"between 1 and {MAX_TRANSCRIPT_COPIES} copies can be ordered")
    fee = round(TRANSCRIPT_FEES[delivery] * copies, 2)
    invoice = db.insert("invoices", {"student_id": student_id, "term": "2026SP", "kind": "transcript",
                                     "description": f"Official transcript ({delivery}, {copies} cop{'y' if copies == 1 else 'ies'})",
                                     "amount": fee, "amount_paid": 0.0,
                                     "due_date": clock.add_days(clock.today(), TRANSCRIPT_DUE_DAYS), "status": "open"})
    request = db.insert("transcript_requests", {"student_id": student_id, "delivery": delivery, "recipient": recipient,
                                                "copies": copies, "fee": fee, "status": "pending",
                                                "requested_on": clock.today(), "invoice_id": invoice["invoice_id"]})
    return {"request_id": request["request_id"], "delivery": delivery, "recipient": recipient, "copies": copies,
            "fee": fee, "invoice_id": invoice["invoice_id"], "due_date": invoice["due_date"]}


@tool("write")
def cancel_transcript_request(student_id: str, request_id: str) -> dict:
    """Cancel a verified student's transcript request that is still pending; an unpaid fee invoice is voided.

    Args:
        student_id: The student's id, e.g. "STU-000042".
        request_id: The request's id, e.g. "TRQ-000012".
    """
    verified_student(student_id)
    request = db.owned("transcript_requests", request_id, "student_id", student_id, "request")
    if request["status"] != "pending":
        raise ToolError(f"request {request_id} is {request['status']}; only pending requests can be cancelled")
    voided = None
    if request["invoice_id"]:
        invoice = db.get("invoices", request["invoice_id"])
        if invoice["status"] == "open" and invoice["amount_paid"] == 0:
            db.update("invoices", invoice["invoice_id"], {"status": "void"})
            voided = invoice["invoice_id"]
    db.update("transcript_requests", request_id, {"status": "cancelled"})
    return {"request_id": request_id, "status": "cancelled", "voided_invoice": voided}


@tool("write")
def transfer_to_human_agents(reason: Literal["graduation_check", "other"], summary: str | None = None) -> dict:
    """Hand the student over to an academic advisor, when the policy says a request is theirs to handle.

    Args:
        reason: Why the student is handed over, e.g. "graduation_check".
        summary: A short note of the request for the advisor, e.g. "senior wants to withdraw from ECON301".
    """
    handoff = db.insert("handoffs", {"reason": reason, "requested_at": clock.now()})
    return {"handoff_id": handoff["handoff_id"], "status": "transferred", "reason": reason}
