# ruff: noqa: E501
"""Twelve real VisIT-Bench instances with two real model responses each.

From the VisIT-Bench leaderboard sandbox (github.com/Hritikbansal/visit_bench_sandbox, MIT;
data CC BY 4.0): instruction, instruction-conditioned caption (``image_dense_captions``), the
image's original URL, and the outputs of LLaVA-13B and InstructBLIP-13B. All twelve are kept for
leaderboards (GPT-4 reference rated correct, no problem in the caption).
"""

ROWS = [
    {
        "id": "visit-19",
        "category": "vizwiz",
        "instruction": "Answer the following question based on the provided image: What is in the bottle?",
        "caption": 'A blurry photo of the back label of a white bottle is shown. Much of the text is unreadable, but some visible words say "Conditioning Glass Cleaner", "CAUTION- EYE IRRITANT", "KEEP OUT OF REACH OF CHILDREN", "Item # 84", and RUTLAND in bright red with a brand logo. A barcode and directions are also visible.',
        "image_url": "https://visit-instruction-tuning.s3.amazonaws.com/visit_images/957_vizwiz_val_00002467.jpg",
        "llava_13b": "The bottle contains a cleaning solution, specifically a glass cleaner, as indicated by the label.",
        "instructblip_13b": "lotion",
    },
    {
        "id": "visit-46",
        "category": "Technical Support",
        "instruction": "What size media does this device use? Is it still readily available for purchase?",
        "caption": 'This is an image of an old style 5 1/4" floppy disk drive. The front is beige with a green LED on the left bezel cover, and there is a flip latch, currently in the vertical position, of the disk slot on the front. The top is open, as this is on a transparent background, and shows the circuit board, ribbon cables, and metal rods, magnets and brackets that compromise the inner electronics of the device.',
        "image_url": "https://visit-instruction-tuning.s3.amazonaws.com/visit_images/346_tested_skill_technical_support_511076668_b651d4e444_b.png",
        "llava_13b": "The device in the image uses a CD/DVD media for storage. Although CDs and DVDs were once popular for music, movies, and data storage, they have largely been replaced by digital media and streaming services in recent years. Therefore, it might not be readily available for purchase, as newer technologies have taken their place. However, you might still find some CDs and DVDs in second-hand stores or older media collections.",
        "instructblip_13b": "This device uses CD-R media, which is still readily available for purchase.",
    },
    {
        "id": "visit-54",
        "category": "aokvqa",
        "instruction": "Answer the following question based on the provided image: What is the appliance the woman is holding used for?",
        "caption": "A woman is with blue painted finger nails is holding an orange hair dryer in a bathroom.",
        "image_url": "https://visit-instruction-tuning.s3.amazonaws.com/visit_images/893_aokvqa_coco_val2014_000000257169.jpg",
        "llava_13b": "The woman in the image is holding a hairdryer, which is a handheld appliance used for drying hair. It helps to speed up the evaporation of water from the hair surface, facilitating the drying process and making it more convenient for people to manage their hair in various conditions.",
        "instructblip_13b": "drying hair",
    },
    {
        "id": "visit-77",
        "category": "Food Recipe",
        "instruction": "Is there a different type of sauce for this and what all is in it?",
        "caption": "A bowl of fettuccini alfredo noodles with small bits of ham.",
        "image_url": "https://visit-instruction-tuning.s3.amazonaws.com/visit_images/124_tested_skill_food_recipe_d8367b6b812e6d2b.png",
        "llava_13b": "The image shows a bowl filled with fettuccine noodles and a creamy white sauce, which is most likely Alfredo sauce. Alfredo sauce is typically made with ingredients such as butter, heavy cream, and grated Parmesan cheese. It is a rich and creamy sauce that pairs well with the fettuccine pasta, providing a delicious and comforting meal.",
        "instructblip_13b": "Yes, there is a different type of sauce in the bowl. The sauce in the bowl is cream sauce, which is made with heavy cream, butter, flour, and other ingredients. The cream sauce adds richness and flavor to the pasta dish.",
    },
    {
        "id": "visit-254",
        "category": "Hazard Identification",
        "instruction": "What does this mean and what is it trying to do?",
        "caption": 'A square metal sign with a bright yellow triangle is shown. Inside of the yellow triangle are the letters "EX". Underneath the triangle are the words: "ATMOSFERA ESPLOSIVA."',
        "image_url": "https://visit-instruction-tuning.s3.amazonaws.com/visit_images/162_tested_skill_hazard_identification_9c5ad5f3cc309ca2.png",
        "llava_13b": 'The image displays a sign with a bomb symbol and the word "Explosiva" written in Spanish. It is a warning sign used to indicate the presence of an explosive substance or potential danger related to explosions. The purpose of this sign is to alert people to exercise caution and maintain a safe distance from the area, as well as to inform them of the potential hazard so they can take appropriate measures to ensure their safety.',
        "instructblip_13b": "This sign is warning of an explosive hazard. It is intended to alert people to the potential danger of explosive materials in the area, and to encourage them to exercise caution and follow safety protocols to avoid accidents or injuries. The sign is likely placed in a location where explosive materials are stored, used, or transported, such as a factory, laboratory, or construction site, to ensure that workers and visitors are aware of the risks and take necessary precautions.",
    },
    {
        "id": "visit-289",
        "category": "Color",
        "instruction": "What color can you get if you mix no. 3 and no 4?",
        "caption": "This image consists of six roughly drawn circles. Each circle has a number in the centre of it and the area not enclosed by the number, which is drawn in a childish bubble font, being shaded in a specific colour. The top row of the image consists from left to right of circles 1 to 3, which are in the following colour order: green (1), brown (2) and blue (3). The second row is placed directly below the first and consists of circles 4 to 6, which are in the following colour order: pink (4), yellow (5) and red (6).",
        "image_url": "https://visit-instruction-tuning.s3.amazonaws.com/visit_images/58_tested_skill_color_71ed8dbc21df3800.png",
        "llava_13b": "If you mix no. 3 and no. 4, you would get a shade of brown.",
        "instructblip_13b": "yellow",
    },
    {
        "id": "visit-327",
        "category": "Climate and Weather understanding",
        "instruction": "Would snow be possible in this area if the temperature remains the same?",
        "caption": "There is a temperature gauge here that has ºC written in the middle between a red line that increases in thickness to the right and a blue line that increases in thickness to the left. There is a 0 in the dead center of the gauge, with numbers going from it to 50 on both sides. The right side has a plus symbol and the left side has a minus symbol. There is a black arrow indicator that is centered on the number 30 on the right side of the gauge.",
        "image_url": "https://visit-instruction-tuning.s3.amazonaws.com/visit_images/49_tested_skill_climate_and_weather_understanding_66e2a7c45607869e.png",
        "llava_13b": "If the temperature remains the same, it is possible that snow could accumulate in this area. The image shows a thermometer reading 37.77°C (99.6°F), which is above the freezing point of water. As long as the temperature stays above the freezing point, the water in the environment would remain in a liquid state and could result in melting snow if it is present. However, if the temperature falls below the freezing point, the water would freeze, and snow would become more likely.",
        "instructblip_13b": "No, snow would not be possible in this area if the temperature remains the same. The thermometer shows a temperature of 30 degrees Celsius, which is well above the freezing point of water at 0 degrees Celsius. In order for snow to form, the temperature needs to be below freezing. Therefore, it is unlikely that snow would form in this area if the temperature remains at 30 degrees Celsius.",
    },
    {
        "id": "visit-443",
        "category": "Counting",
        "instruction": "How many total clock hands, including the hands for seconds and minutes, are on these clocks combined?",
        "caption": "There are twelve clocks which are at least partially visible in this image, Each of the clocks has only some of the numbers that would normally occur on a clock on them. Each clock has three hands. To the left of the image are a series of long rectangular devices, which appear like they may be thermometers but it is not clear from this blurred image if that is the case.",
        "image_url": "https://visit-instruction-tuning.s3.amazonaws.com/visit_images/61_tested_skill_counting_48d5edff16731ac4.png",
        "llava_13b": "There are a total of 14 clock hands, including the hands for seconds and minutes, on the two clocks combined.",
        "instructblip_13b": "There are a total of 12 clock hands, including the hands for seconds and minutes, on these clocks combined.",
    },
    {
        "id": "visit-507",
        "category": "Traffic sign identification",
        "instruction": "What does this sign warn pedestrians at the crosswalk about?",
        "caption": "There is a large yellow sign. It is rectangular with a diamond shape in the centre. Inside of the diamond is a car moving from left to right with speed lines drawn behind it Above the car windshield there is a man suspended in the air. The man’s head is facing towards the windshield and his legs are in the air. Behind the sign a woman stands in front of some plants, which are themselves in front of a large stone building.",
        "image_url": "https://visit-instruction-tuning.s3.amazonaws.com/visit_images/412_tested_skill_traffic_sign_identification_3826903398_7a3b21c9ef_b.png",
        "llava_13b": "The sign at the crosswalk warns pedestrians of an approaching car that might be speeding or losing control. This sign is meant to alert pedestrians to be cautious and aware of their surroundings while crossing the street, ensuring their safety.",
        "instructblip_13b": "The sign warns pedestrians at the crosswalk to be cautious and aware of their surroundings while crossing the street. Specifically, the sign highlights the potential danger of a car falling from the sky, which could pose a hazard to pedestrians if they are not paying attention to their surroundings. The sign serves as a reminder for pedestrians to stay vigilant and take necessary precautions while crossing the street.",
    },
    {
        "id": "visit-561",
        "category": "Architectural Styles",
        "instruction": "What is this house made of and when would you see these?",
        "caption": "There is a dark brown gingerbread house here, with gumdrops and marshmallows affixed to the walls and Christmas style decorations engraved with hardened frosting.",
        "image_url": "https://visit-instruction-tuning.s3.amazonaws.com/visit_images/28_tested_skill_architectural_styles_455e19188782ba38.png",
        "llava_13b": "The house in the image is made out of gingerbread and candy, which makes it a unique and creative display. You would typically see this gingerbread house during the holiday season, especially around Christmas time, as it is a festive and decorative treat. It is often associated with holiday traditions and celebrations, where families and friends come together to create and enjoy such unique and imaginative confections.",
        "instructblip_13b": "This house is made of gingerbread, and you would typically see it during the holiday season, especially around Christmas time.",
    },
    {
        "id": "visit-75",
        "category": "Recognition",
        "instruction": "Where is this located at?",
        "caption": "This is an aerial view of the large cement wall of the Hoover Dam. The river is bright blue above the wall and darker below. Rocky mountain cliffs carved out surround the dam with two roads at the top the one side mountains line the landscape in the background.",
        "image_url": "https://visit-instruction-tuning.s3.amazonaws.com/visit_images/359_tested_skill_recognition_Hoover_Dam_HDR.png",
        "llava_13b": "This location is in the desert, near a large rock formation that has a water tunnel or a dam built into it. The structure is an engineering marvel and is surrounded by a breathtaking landscape.",
        "instructblip_13b": "grand canyon",
    },
    {
        "id": "visit-10",
        "category": "vcr",
        "instruction": "Where is the person in the black suit, white shirt, and the blonde hair right now ?",
        "caption": "A young Leonardo DiCaprio standing aboard the famous Titanic in a room with wood trimmed walls. His blond hair is slicked back and he's wearing a white dress shirt, white bow tie, and a black overcoat. A few other well-dressed individuals are mingling in the background.",
        "image_url": "https://visit-instruction-tuning.s3.amazonaws.com/visit_images/914_vcr_1010_titanic_00.56.58.854-00.57.02.903@0.jpg",
        "llava_13b": "The person in the black suit, white shirt, and blonde hair is standing in a hallway.",
        "instructblip_13b": "The person in the black suit, white shirt, and blonde hair is standing in a room.",
    },
]
